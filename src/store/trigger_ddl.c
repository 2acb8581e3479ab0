/*-------------------------------------------------------------------------
 *
 * trigger_ddl.c
 *	  The DDL the extension runs on its own triggers of trained tables (and
 *	  on a distributed table's queue), and the names it runs it on.
 *
 * Invariants:
 *	- unlearn_changing_triggers is true exactly while such DDL runs, so
 *	  that the extension's event triggers (exec/trigger.c), which refuse
 *	  a role's changes of those triggers, let the extension's own pass.
 *	  It is reset on error.
 *	- Names are schema-qualified and quoted (relation_qualified_name), so
 *	  that no search_path resolves them elsewhere.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

bool		unlearn_changing_triggers = false;

/* relid's schema-qualified, quoted name */
char *
relation_qualified_name(Oid relid)
{
	char	   *rel = get_rel_name(relid);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), rel);
}

/*
 * Run commands (SQL strings), the extension's DDL on the triggers of table,
 * a name for errors, with unlearn_changing_triggers set.
 */
void
run_trigger_ddl(List *commands, const char *table)
{
	ListCell   *lc;

	unlearn_changing_triggers = true;
	PG_TRY();
	{
		foreach(lc, commands)
			if (SPI_execute((const char *) lfirst(lc), false, 0) < 0)
				elog(ERROR, "could not change the triggers of %s", table);
	}
	PG_FINALLY();
	{
		unlearn_changing_triggers = false;
	}
	PG_END_TRY();
}
