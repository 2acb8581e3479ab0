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
 * Refuse to train a model on relid (or on its partition root) while a
 * statement of this session is changing it: the statement's AFTER
 * triggers maintain the models its BEFORE trigger locked.
 */
void
refuse_in_statement(Oid relid)
{
	Oid			root = relid;

	if (get_rel_relispartition(relid))
		root = llast_oid(get_partition_ancestors(relid));
	if (statement_in_progress(root))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("table \"%s\" is being changed by a statement of this session",
						get_rel_name(relid)),
				 errdetail("A model cannot be trained on it until the statement ends."),
				 errhint("Train the model in a statement of its own.")));
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
	lock_source(m->def.source);
	return m;
}
