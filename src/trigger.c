/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  The triggers that keep every model of a table in step with it, inside
 *	  the changing transaction, and the event triggers that keep models from
 *	  outliving their table or columns.
 *
 * unlearn_maintain_trigger is an AFTER ... FOR EACH STATEMENT trigger with
 * transition tables (unlearn_old, unlearn_new), so a model is read, locked
 * and written once per statement, not once per row.  For each model of the
 * table, in model-name order (one lock order, so no deadlock between
 * statements), it switches to the model's owner with a pinned search_path,
 * locks the model rows FOR UPDATE, applies removal.c, writes the model and
 * one ledger row.  Everything is ordinary transactional writes: ROLLBACK
 * (or ROLLBACK TO SAVEPOINT) leaves the catalog rows exactly as they were.
 *
 * Concurrency: READ COMMITTED deleters wait on the row lock and then read
 * the committed model; REPEATABLE READ and SERIALIZABLE deleters get a
 * serialization failure (40001), re-raised here with a retry hint.
 *
 * UPDATE is rectification: the multiset difference OLD EXCEPT ALL NEW is
 * removed and NEW EXCEPT ALL OLD is added, so an UPDATE that does not touch
 * the model's columns spends nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(unlearn_maintain_trigger);
PG_FUNCTION_INFO_V1(unlearn_truncate_trigger);
PG_FUNCTION_INFO_V1(unlearn_on_sql_drop);
PG_FUNCTION_INFO_V1(unlearn_on_ddl_end);

/* Rows of a query over the transition tables, mapped into model space. */
static RowBatch *
read_rows(UnlearnModel *m, const char *query)
{
	RowBatch   *batch = palloc0(sizeof(RowBatch));
	double	   *raw = palloc(sizeof(double) * (m->p + 1));
	uint64		i;

	if (SPI_execute(query, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the transition table");
	batch->count = (int) SPI_processed;
	batch->x = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(double) * m->p * Max(batch->count, 1));
	batch->labels = palloc(sizeof(char *) * Max(batch->count, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		label_null;
		double	   *x = batch->x + (Size) i * m->p;

		fetch_row_from_tuple(m, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, raw,
							 &batch->labels[i], &label_null);
		if (label_null)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("label column \"%s\" of model \"%s\" must not be null",
							m->label, m->name),
					 errhint("Every row of a trained table needs a label.")));
		memcpy(x, raw, sizeof(double) * m->dims);
		map_row(x, m->dims, m->intercept, m->scale);
	}
	SPI_freetuptable(SPI_tuptable);
	return batch;
}

static UnlearnModel *
lock_model(const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	UnlearnModel *volatile m = NULL;

	PG_TRY();
	{
		m = catalog_load_model(name, true, true, true);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE)
		{
			FlushErrorState();
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access to model \"%s\" due to a concurrent change", name),
					 errdetail("Another transaction changed the model since this transaction's snapshot."),
					 errhint("Retry the transaction.")));
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	return m;
}

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

static void
maintain_model(ModelRef *ref, TriggerData *td, const char *operation)
{
	UnlearnModel *m;
	RowBatch   *removed = NULL;
	RowBatch   *added = NULL;
	double		bound;
	instr_time	start;
	double		t_load,
				t_rows,
				t_apply;

	INSTR_TIME_SET_CURRENT(start);
	m = lock_model(ref->name);
	t_load = elapsed_ms(start);
	if (m == NULL)
		return;					/* dropped by a concurrent transaction */

	if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		removed = read_rows(m, build_feature_select(m, "unlearn_old", false));
	else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		added = read_rows(m, build_feature_select(m, "unlearn_new", false));
	else
	{
		char	   *old_q = build_feature_select(m, "unlearn_old", false);
		char	   *new_q = build_feature_select(m, "unlearn_new", false);

		removed = read_rows(m, psprintf("(%s) EXCEPT ALL (%s)", old_q, new_q));
		added = read_rows(m, psprintf("(%s) EXCEPT ALL (%s)", new_q, old_q));
		if (removed->count == 0 && added->count == 0)
			return;				/* no model column changed */
	}
	if ((removed ? removed->count : 0) + (added ? added->count : 0) == 0)
		return;

	t_rows = elapsed_ms(start);
	bound = apply_row_changes(m, removed, added);
	t_apply = elapsed_ms(start);
	catalog_update_model(m);
	catalog_ledger(m, operation, removed ? removed->count : 0, added ? added->count : 0,
				   bound, m->retrained_now);
	elog(DEBUG1, "unlearn: model \"%s\": lock and load %.2f ms, rows %.2f ms, update %.2f ms, write %.2f ms",
		 m->name, t_load, t_rows - t_load, t_apply - t_rows, elapsed_ms(start) - t_apply);
}

Datum
unlearn_maintain_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	const char *operation;
	List	   *refs;
	ListCell   *lc;
	Oid			save_userid;
	int			save_sec_context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._maintain() must be called as a trigger")));
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._maintain() must be an AFTER ... FOR EACH STATEMENT trigger")));
	if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		operation = "delete";
	else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		operation = "insert";
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		operation = "update";
	else
		elog(ERROR, "unlearn._maintain() fired by an unexpected event");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_register_trigger_data(td) != SPI_OK_TD_REGISTER)
		elog(ERROR, "SPI_register_trigger_data failed");

	refs = catalog_models_of_relation(RelationGetRelid(td->tg_relation));
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	foreach(lc, refs)
	{
		ModelRef   *ref = (ModelRef *) lfirst(lc);
		int			nestlevel;

		/* maintenance runs as the model owner, with a pinned search_path */
		SetUserIdAndSecContext(ref->owner, save_sec_context | SECURITY_RESTRICTED_OPERATION);
		nestlevel = NewGUCNestLevel();
		(void) set_config_option("search_path", "pg_catalog, pg_temp",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		maintain_model(ref, td, operation);
		AtEOXact_GUC(false, nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	SPI_finish();
	return PointerGetDatum(NULL);
}

Datum
unlearn_truncate_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._forbid_truncate() must be called as a trigger")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot truncate table \"%s\" because unlearn models are trained on it",
					RelationGetRelationName(td->tg_relation)),
			 errdetail("TRUNCATE does not fire row deletion triggers, so the models could not forget the rows."),
			 errhint("Use DELETE to erase rows with certified removal, or drop the models with unlearn_drop() first.")));
	return PointerGetDatum(NULL);
}

/* run f as the owner of the catalog (the role that created the extension) */
static Oid
catalog_owner(void)
{
	bool		isnull;

	if (SPI_execute("SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'unlearn.models'::regclass",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not find unlearn.models");
	return DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* every table with models must keep its four triggers, ENABLE ALWAYS */
static void
check_triggers_intact(const char *where)
{
	uint64		i;

	if (SPI_execute(psprintf("SELECT m.source::oid, m.model FROM (SELECT DISTINCT ON (source) source, model "
							 "FROM unlearn.models %s ORDER BY source, model) m "
							 "WHERE (SELECT count(*) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = m.source "
							 "AND t.tgname IN ('unlearn_after_delete', 'unlearn_after_insert', "
							 "'unlearn_after_update', 'unlearn_before_truncate') AND t.tgenabled = 'A') <> 4",
							 where), false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the unlearn triggers");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		char	   *model = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("the unlearn triggers of table \"%s\" must stay enabled", get_rel_name(relid)),
				 errdetail("Model \"%s\" relies on them to forget deleted rows.", model),
				 errhint("Drop the table's models with unlearn_drop() first.")));
	}
}

Datum
unlearn_on_sql_drop(PG_FUNCTION_ARGS)
{
	Oid			save_userid;
	int			save_sec_context;
	uint64		i;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "unlearn._on_sql_drop() must be called as an event trigger");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* dropped tables take their models with them, whoever owns the models */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(catalog_owner(), save_sec_context | SECURITY_RESTRICTED_OPERATION);
	if (SPI_execute("DELETE FROM unlearn.models m USING pg_catalog.pg_event_trigger_dropped_objects() d "
					"WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0 "
					"AND m.source = d.objid RETURNING m.model",
					false, 0) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "could not drop the models of dropped tables");
	for (i = 0; i < SPI_processed; i++)
		ereport(NOTICE,
				(errmsg("dropped model \"%s\" with its table",
						SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1))));
	SetUserIdAndSecContext(save_userid, save_sec_context);

	if (!unlearn_changing_triggers)
		check_triggers_intact("");
	SPI_finish();
	PG_RETURN_VOID();
}

Datum
unlearn_on_ddl_end(PG_FUNCTION_ARGS)
{
	uint64		i;
	List	   *relids = NIL;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "unlearn._on_ddl_end() must be called as an event trigger");
	if (unlearn_changing_triggers)
		PG_RETURN_VOID();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT DISTINCT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"JOIN unlearn.models m ON m.source = c.objid "
					"WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		relids = lappend_oid(relids, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																	SPI_tuptable->tupdesc, 1, &isnull)));
	}
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		List	   *refs = catalog_models_of_relation(relid);
		ListCell   *lc2;

		foreach(lc2, refs)
		{
			UnlearnModel *m = catalog_load_model(((ModelRef *) lfirst(lc2))->name, false, false, false);

			verify_source_columns(m);
		}
		check_triggers_intact(psprintf("WHERE source = %u", relid));
	}
	SPI_finish();
	PG_RETURN_VOID();
}
