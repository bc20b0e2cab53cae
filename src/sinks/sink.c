/* The sinks as one: what the engine, the stage and the live capture's writer hand to each. */
#include "sink.h"

int sinks_flow(struct sink *sinks, unsigned n, const struct flow_record *rec)
{
	for (unsigned i = 0; i < n; i++)
		if (sinks[i].ops->flow(sinks[i].self, rec) != 0)
			return -1;
	return 0;
}

int sinks_tick(struct sink *sinks, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (sinks[i].ops->tick(sinks[i].self) != 0)
			return -1;
	return 0;
}
