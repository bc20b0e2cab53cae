/* The sinks as one: the registry of the kinds of sink the run can open (each kind is defined in
 * its own file: sink_kinds.h lists them), and what the engine, the stage and the live capture's
 * writer hand to each. */
#include "sink.h"

#include "sink_kinds.h"

/* The registry: the kinds in the order they are opened (the primary first). */
#define SINK_KIND_ENTRY(name) &name##_kind,
static const struct sink_kind *const kinds[] = { SINK_KIND_LIST(SINK_KIND_ENTRY) };
#undef SINK_KIND_ENTRY

const struct sink_kind *sink_kind_at(unsigned i)
{
	return i < sizeof(kinds) / sizeof(kinds[0]) ? kinds[i] : NULL;
}

/* ---- the sinks as one ---- */

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
