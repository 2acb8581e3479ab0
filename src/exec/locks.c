/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  The lock order of admin functions: the table (SHARE), then the model
 *	  row.  Writers hold the table's ROW EXCLUSIVE lock when their BEFORE
 *	  statement trigger takes the model rows (trigger.c), so the two orders
 *	  form no cycle.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "executor/spi.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "utils/lsyscache.h"

/*
 * Admin functions lock the table before the model row: writers hold the
 * table's ROW EXCLUSIVE lock when their BEFORE statement trigger waits for
 * the model row, so this order has no cycle.  SHARE waits for the table's
 * open writers and keeps new ones out until commit.
 */
void
lock_source(Oid relid)
{
	if (get_rel_name(relid) == NULL)
		return;					/* dropped: nothing to wait for */
	if (SPI_execute(psprintf("LOCK TABLE %s IN SHARE MODE", relation_qualified_name(relid)),
					false, 0) < 0)
		elog(ERROR, "could not lock the source table");
}

/*
 * Refuse to train, retrain, replace or drop a model of table relid, change
 * its partitions, or apply its queue, from inside a statement of this
 * session that is changing the table (a function it calls): its AFTER
 * triggers apply its rows to the models its BEFORE trigger listed, decoded
 * with their definitions of that time, and its row triggers queue rows for
 * the models they find.  Such a statement is one that the executor (or
 * COPY FROM) is running with the table or a partition as a result relation
 * (writing_statements.c): its statement triggers' pending change lasts
 * only while it runs.  Reading the table in the same statement is no
 * concern, nor is a deferred constraint's check waiting for the commit.
 * what: "train a model on", ...
 */
void
refuse_in_statement(Oid relid, const char *what)
{
	Oid			root = relid;

	if (get_rel_name(relid) == NULL)
		return;					/* dropped */
	if (get_rel_relispartition(relid))
		root = llast_oid(get_partition_ancestors(relid));
	if (statement_writing(root))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot %s \"%s\" because a statement of this session is changing it",
						what, get_rel_name(root)),
				 errhint("Call the function in a statement of its own.")));
}

/*
 * The owner and source of model name (read without its definition, so a
 * model with a corrupt one qualifies), once caller is checked to own the
 * model or its table (hint: what the table's owner may do) and the table
 * is locked (lock_source).
 */
UnlearnModel *
lock_source_for_owners(const char *name, Oid caller, const char *hint)
{
	UnlearnModel *m = palloc0(sizeof(UnlearnModel));

	m->def.name = pstrdup(name);
	catalog_model_identity(name, false, false, &m->def.owner, &m->def.source);
	check_model_or_table_owner(m, caller, hint);
	refuse_in_statement(m->def.source, "change a model of");
	lock_source(m->def.source);
	return m;
}
