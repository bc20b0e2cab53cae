/* merge: `iwscope merge` (probes' SQLite files into one database) and `iwscope schema`. */
#ifndef IWSCOPE_MERGE_H
#define IWSCOPE_MERGE_H

int merge_main(int argc, char **argv);
int schema_main(int argc, char **argv);

#endif
