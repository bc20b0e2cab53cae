/* mapread: a capture file as a stdio stream read straight from its pages (mmap), so libpcap
 * gets each record with one copy and no read(2) per buffer. */
#ifndef IWSCOPE_MAPREAD_H
#define IWSCOPE_MAPREAD_H

#include <stdio.h>

/* A read-only stream over the regular file at path, mapped MAPREAD_WINDOW bytes at a time (so
 * resident memory stays one window, whatever the file's size). NULL when path is not a
 * regular file or cannot be mapped: the caller then uses fopen(), which reports why. */
FILE *mapread_open(const char *path);

#endif
