/* lines: a sink printing one line per finished flow (text or JSON lines) to a stream. */
#ifndef IWSCOPE_LINES_H
#define IWSCOPE_LINES_H

#include <stdbool.h>
#include <stdio.h>

#include "sink.h"

/* A sink writing to out (borrowed); json selects JSON lines. */
struct sink lines_sink(FILE *out, bool json);

#endif
