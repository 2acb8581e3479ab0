/*-------------------------------------------------------------------------
 *
 * shard_trigger.c
 *	  unlearn._shard_queue(): the row trigger that Citus copies to each
 *	  shard of a distributed table with models (store/citus_queue.c).  On
 *	  a worker it queues every changed row of the shard, as the model
 *	  decodes it, in the co-located shard of the table's queue, in the
 *	  writing transaction; the coordinator's apply consumes the queue.
 *
 * A worker has no catalog of the models, so the trigger's arguments carry
 * what decoding needs (citus_attach_model): model, table, queue, loss,
 * nulls, d, p, "array" or "columns", the label column, then the feature
 * columns.  Rows are decoded by rows.c, as unlearn._defer() decodes them
 * (deferred.c), into the same queued-row format: -1 for a row that leaves
 * the shard, +1 for one that enters it, an UPDATE both unless the model's
 * view of the row is unchanged, a NULL contribution for a row outside the
 * model (a null under "nulls": "skip").
 *
 * Checks, against a role that attaches this function itself:
 *	- the trigger's name is one citus_attach_model gives (unlearn_shard_,
 *	  then Citus's shard suffix);
 *	- the relation is a shard of a distributed table (pg_dist_shard, which
 *	  Citus keeps on every node), and that table's qualified name is the
 *	  "table" argument and hashes to the "queue" argument: a trigger on one
 *	  table writes only that table's queue;
 *	- the columns have types the model can read.
 * The queue shard is written as the extension's owner (only it may); the
 * row's values are read in binary, through rows.c's closed list of
 * built-in types, so no code a role defines runs there.  A shard's
 * trigger that a worker's role disables, or a write with triggers off
 * (session_replication_role), leaves the model behind the table:
 * unlearn_verify then finds the table's rows different from the model's.
 *
 * Cost per row: O(p) to decode and encode, and one INSERT; the queue
 * shard's name is looked up once per shard and backend.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/memutils.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(unlearn_shard_queue_trigger);

#define SHARD_ARGS_FIXED 9		/* the arguments before the feature columns */

/*
 * A shard's queue shard, found once per backend and checked at each use:
 * a queue dropped and made again (its table's last model dropped, then a
 * new one trained) has shards of other names.
 */
typedef struct ShardQueue
{
	Oid			shard;			/* the trigger's relation */
	char	   *queue_args;		/* the "queue" argument it was found for */
	char	   *queue_shard;	/* the co-located queue shard's name, in unlearn */
	AttrNumber	key;			/* the shard's distribution column */
	Oid			key_type;
	char	   *insert;			/* the INSERT into the queue shard */
	SPIPlanPtr	plan;
	struct ShardQueue *next;
} ShardQueue;

static ShardQueue *shard_queues = NULL;

static void
refuse_shard_trigger(TriggerData *td, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("unlearn._shard_queue() fired by trigger \"%s\" on \"%s\", which unlearn did not create",
					td->tg_trigger->tgname, RelationGetRelationName(td->tg_relation)),
			 errdetail("%s", why),
			 errhint("Only unlearn_train() on a distributed table attaches this function to its shards.")));
}

/*
 * The INSERT into the queue shard co-located with the trigger's shard,
 * after checking that the shard's table is the "table" argument and owns
 * the "queue" argument.
 */
static ShardQueue *
find_queue_shard(TriggerData *td, const char *table, const char *queue)
{
	Relation	rel = td->tg_relation;
	ShardQueue *sq;
	const char *name = RelationGetRelationName(rel);
	const char *suffix = strrchr(name, '_');
	char	   *end;
	int64		shardid;
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	MemoryContext old;

	for (sq = shard_queues; sq != NULL; sq = sq->next)
		if (sq->shard == RelationGetRelid(rel) && strcmp(sq->queue_args, queue) == 0)
		{
			if (OidIsValid(get_relname_relid(sq->queue_shard,
											 get_namespace_oid("unlearn", false))))
				return sq;
			sq->shard = InvalidOid; /* stale: found again below */
		}
	if (suffix == NULL || !OidIsValid(get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE)))
		refuse_shard_trigger(td, "The relation is no shard of a distributed table.");
	shardid = strtoi64(suffix + 1, &end, 10);
	if (*end != '\0' || shardid <= 0)
		refuse_shard_trigger(td, "The relation is no shard of a distributed table.");
	args[0] = Int64GetDatum(shardid);
	args[1] = CStringGetTextDatum(queue);
	/* shard_name() as Citus names shards: shortened, schema-qualified, quoted */
	if (SPI_execute_with_args("SELECT pg_catalog.quote_ident(n.nspname) || '.' || "
							  "pg_catalog.quote_ident(c.relname), "
							  "pg_catalog.shard_name(s.logicalrelid, s.shardid, false), "
							  "pg_catalog.shard_name(q.oid, qs.shardid, false), "
							  "pg_catalog.to_regclass(pg_catalog.shard_name(q.oid, qs.shardid, false)) IS NOT NULL, "
							  "pg_catalog.column_to_column_name(s.logicalrelid, p.partkey), "
							  "q.relname || '_' || qs.shardid "
							  "FROM pg_catalog.pg_dist_shard s "
							  "JOIN pg_catalog.pg_class c ON c.oid = s.logicalrelid "
							  "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
							  "JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid = s.logicalrelid "
							  "AND p.partmethod = 'h' "
							  "JOIN pg_catalog.pg_class q ON q.relname = $2 "
							  "AND q.relnamespace = 'unlearn'::pg_catalog.regnamespace "
							  "JOIN pg_catalog.pg_dist_shard qs ON qs.logicalrelid = q.oid "
							  "AND qs.shardminvalue = s.shardminvalue "
							  "WHERE s.shardid = $1",
							  2, argtypes, args, NULL, true, 2) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_shard");
	if (SPI_processed != 1)
		refuse_shard_trigger(td, "The relation is no shard of a distributed table with this queue.");
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2),
			   quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), name)) != 0)
		refuse_shard_trigger(td, "The relation is no shard of a distributed table.");
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), table) != 0 ||
		strcmp(citus_queue_name(table), queue) != 0)
		refuse_shard_trigger(td, "Its table is not the one its queue belongs to.");
	/* co-located shards move together; a table whose co-location was undone may not */
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4), "t") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the queue shard of model \"%s\" is not on the worker of its table's shard",
						td->tg_trigger->tgargs[0]),
				 errdetail("The table and its queue are no longer co-located, and a shard of one moved."),
				 errhint("On the coordinator, move the shards together again, then co-locate them with update_distributed_table_colocation('unlearn.%s', colocate_with => '%s').",
						 queue, table)));

	old = MemoryContextSwitchTo(TopMemoryContext);
	sq = palloc0(sizeof(ShardQueue));
	sq->shard = RelationGetRelid(rel);
	sq->queue_args = pstrdup(queue);
	sq->queue_shard = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6);
	sq->key = get_attnum(RelationGetRelid(rel),
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5));
	if (sq->key <= 0)
		refuse_shard_trigger(td, "The relation has no distribution column.");
	sq->key_type = TupleDescAttr(RelationGetDescr(rel), sq->key - 1)->atttypid;
	/* the row's key, so that Citus's splits and moves take the entry with its row */
	sq->insert = psprintf("INSERT INTO %s (key, model, change, contribution) "
						  "VALUES ($1, $2, $3, $4)",
						  SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
	sq->next = shard_queues;
	shard_queues = sq;
	MemoryContextSwitchTo(old);
	return sq;
}

static void
queue_shard_row(ShardQueue *sq, TupleTableSlot *slot, const char *model, int change,
				bytea *contribution)
{
	Datum		args[4];
	char		nulls[4] = "    ";
	bool		isnull;

	if (sq->plan == NULL)
	{
		Oid			types[4] = {sq->key_type, TEXTOID, INT2OID, BYTEAOID};
		SPIPlanPtr	plan = SPI_prepare(sq->insert, 4, types);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the queue insert");
		sq->plan = plan;
	}
	args[0] = slot_getattr(slot, sq->key, &isnull);
	if (isnull)
		nulls[0] = 'n';
	args[1] = CStringGetTextDatum(model);
	args[2] = Int16GetDatum(change);
	if (contribution != NULL)
		args[3] = PointerGetDatum(contribution);
	else
	{
		args[3] = (Datum) 0;
		nulls[3] = 'n';
	}
	if (SPI_execute_plan(sq->plan, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not queue a row change of model \"%s\"", model);
}

/* the model a shard's trigger decodes for, from its arguments */
static UnlearnModel *
model_of_arguments(TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	char	  **a = tg->tgargs;
	UnlearnModel *m = palloc0(sizeof(UnlearnModel));
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	int			j;

	if (tg->tgnargs <= SHARD_ARGS_FIXED)
		refuse_shard_trigger(td, "Its arguments are not those of a model.");
	m->def.name = a[0];
	m->def.loss = strcmp(a[3], "squared") == 0 ? LOSS_SQUARED : LOSS_LOGISTIC;
	m->def.nulls = strcmp(a[4], "skip") == 0 ? NULLS_SKIP :
		strcmp(a[4], "impute") == 0 ? NULLS_IMPUTE : NULLS_ERROR;
	m->def.dims = atoi(a[5]);
	m->def.p = atoi(a[6]);
	m->def.feature_array = strcmp(a[7], "array") == 0;
	m->def.label = a[8];
	m->def.nfeatures = tg->tgnargs - SHARD_ARGS_FIXED;
	m->def.features = &a[SHARD_ARGS_FIXED];
	m->def.source = RelationGetRelid(td->tg_relation);
	m->def.column_types = palloc(sizeof(Oid) * (m->def.nfeatures + 1));
	m->call.finite_check = 1;
	if (m->def.dims <= 0 || m->def.p < m->def.dims || m->def.p > m->def.dims + 1 ||
		(m->def.feature_array && m->def.nfeatures != 1) ||
		(!m->def.feature_array && m->def.nfeatures != m->def.dims))
		refuse_shard_trigger(td, "Its arguments are not those of a model.");
	for (j = 0; j <= m->def.nfeatures; j++)
	{
		const char *col = j == 0 ? m->def.label : m->def.features[j - 1];
		AttrNumber	att = get_attnum(m->def.source, col);
		bool		is_array;
		Oid			type;

		if (att <= 0)
			refuse_shard_trigger(td, "A column it names is missing.");
		type = TupleDescAttr(desc, att - 1)->atttypid;
		if (j == 0 ? !label_type_supported(type, m->def.loss) :
			!feature_type_supported(type, &is_array) || is_array != m->def.feature_array)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of \"%s\" has a type model \"%s\" cannot read",
							col, RelationGetRelationName(td->tg_relation), m->def.name),
					 errhint("Change the column back, or drop the model with unlearn_drop() on the coordinator.")));
		m->def.column_types[j == 0 ? m->def.nfeatures : j - 1] = type;
	}
	return m;
}

/* the contribution of the row in slot, or NULL for a row outside the model */
static bytea *
shard_row_contribution(SlotRowReader *reader, UnlearnModel *m, TupleTableSlot *slot,
					   bool *same_as, bytea *other)
{
	double	   *raw = palloc0(sizeof(double) * m->def.p);
	char	   *label = NULL;
	double		value = 0.0;
	bytea	   *out;

	if (!slot_row_decode(reader, slot, raw, &label, &value))
		out = NULL;
	else
		out = encode_queued_row(m->def.p, raw, label, value, NULL);
	if (same_as != NULL)
		*same_as = (out == NULL && other == NULL) ||
			(out != NULL && other != NULL && VARSIZE(out) == VARSIZE(other) &&
			 memcmp(out, other, VARSIZE(out)) == 0);
	return out;
}

Datum
unlearn_shard_queue_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	ExtensionContext ctx;
	UnlearnModel *m;
	ShardQueue *sq;
	SlotRowReader *reader;
	bytea	   *old_row = NULL;
	bytea	   *new_row = NULL;
	bool		has_old,
				has_new,
				same = false;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._shard_queue() must be called as a trigger")));
	if (strncmp(td->tg_trigger->tgname, UNLEARN_SHARD_TRIGGER_PREFIX,
				strlen(UNLEARN_SHARD_TRIGGER_PREFIX)) != 0 ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		refuse_shard_trigger(td, "Its name or its event is not one unlearn gives.");
	has_old = TRIGGER_FIRED_BY_DELETE(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	has_new = TRIGGER_FIRED_BY_INSERT(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = model_of_arguments(td);
	sq = find_queue_shard(td, td->tg_trigger->tgargs[1], td->tg_trigger->tgargs[2]);
	reader = slot_row_reader_begin(m, td->tg_relation);
	if (has_old)
		old_row = shard_row_contribution(reader, m, td->tg_trigslot, NULL, NULL);
	if (has_new)
		new_row = shard_row_contribution(reader, m,
										 TRIGGER_FIRED_BY_UPDATE(td->tg_event) ?
										 td->tg_newslot : td->tg_trigslot,
										 has_old ? &same : NULL, old_row);
	slot_row_reader_end(reader);
	/* an UPDATE that leaves the model's view of the row as it was queues nothing */
	if (!(has_old && has_new && same))
	{
		if (has_old)
			queue_shard_row(sq, td->tg_trigslot, m->def.name, -1, old_row);
		if (has_new)
			queue_shard_row(sq, TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newslot :
							td->tg_trigslot, m->def.name, 1, new_row);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	return PointerGetDatum(NULL);
}
