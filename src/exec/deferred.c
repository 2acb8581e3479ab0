/*-------------------------------------------------------------------------
 *
 * deferred.c
 *	  Deferred and asynchronous removal (unlearn_train's "removal":
 *	  "deferred" or "async"): a row trigger queues every changed row of
 *	  the table in unlearn.pending; unlearn_apply_pending applies the queue
 *	  to the model in one step, and for an async model so does the
 *	  maintenance worker (worker.c) within unlearn.apply_delay.
 *
 * This is the path for tables whose statement triggers cannot see the
 * rows (a partition tree with foreign tables, through postgres_fdw) and
 * for engines whose triggers must not write the model (Citus shards).
 * Invariants:
 *
 *	- Queue.  Only unlearn._defer() (a row trigger the extension attaches,
 *	  running as the extension) adds entries, one per changed row and
 *	  deferred model: -1 for a row that leaves the table, +1 for one that
 *	  enters it, an UPDATE both unless the model's columns are unchanged.
 *	  An entry's contribution is the row as the model decodes it (its
 *	  features as float8 and its canonical label), or NULL for a row
 *	  outside the model (a null under "nulls": "skip", an undeclared
 *	  label).  Entries go only with the apply that consumes them, with a
 *	  retrain of the model (which then reflects the table), or with the
 *	  model (catalog_delete_model, the drop of its table; a new model of
 *	  the same name starts with none).  The queue is transactional: a
 *	  ROLLBACK takes its entries back with its rows.
 *	- The model plus its queue reflects exactly the table's rows after
 *	  every statement.  While the queue is not empty a deferred model
 *	  withholds its weights (load_predict_model), so that nothing a reader
 *	  sees depends on a queued deletion: its spent covers the applied
 *	  changes only.  An async model serves the version of its last apply,
 *	  published before the queued changes: a queued erasure is complete
 *	  when the apply that consumes it commits.
 *	- The worker's apply (apply_async_queue) takes no table lock: it runs
 *	  under REPEATABLE READ, and reads the queue, reads the table (a
 *	  re-anchoring, rebuild or retrain) and deletes the entries it applied
 *	  in one snapshot, so entries committed meanwhile stay queued for the
 *	  next apply.
 *	- Apply locks the table (SHARE) and then the model row, the order of
 *	  unlearn_retrain: no writer can queue while it runs, so it consumes
 *	  exactly the entries by which the table differs from the model, and
 *	  applies them as the statement triggers apply one statement's rows
 *	  (trigger.c): same step, bounds, budget rule, retrain and ledger.
 *
 * Cost: a queued row costs O(p) plus three catalog statements (the
 * table's models, the model's definition, the insert); an apply costs
 * what one statement of the same rows costs an immediate model, plus
 * O(n_queue p) to read the queue.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(unlearn_defer_trigger);
PG_FUNCTION_INFO_V1(unlearn_apply_pending);
PG_FUNCTION_INFO_V1(unlearn_wait);

/* how often unlearn_wait looks at the queue, and hurries the worker */
#define WAIT_POLL_MS 20
#define WAIT_REQUEST_MS 1000

/*
 * A contribution: the row's p doubles (raw: the first d are the
 * features, unmapped), its label's value, then its canonical label text,
 * and, for a model with cohorts and a row in one, a zero byte and the
 * cohort key (a contribution queued before 0.19.0 ends with the label).
 * A model that releases nothing (too few rows, suspended) needs only the
 * count of its rows: its contributions are the header alone, p = 0.
 */
typedef struct QueuedRowHeader
{
	int32		p;				/* and, from bit 24 on, the width of x's values */
	int32		label_len;
	double		label_value;
	/* x[p]; char label[label_len] */
} QueuedRowHeader;

/*
 * How x's values are stored: as doubles (every contribution before
 * 0.22.0), or, when each is an integer that fits (features that are
 * counts, pixels, one-hot flags), as unsigned bytes, 16-bit or 32-bit
 * integers, which give back the same doubles.  A -0, a NaN (a missing
 * value) or a fraction keeps the doubles.
 */
typedef enum QueuedWidth
{
	QUEUED_DOUBLE = 0,
	QUEUED_UINT8 = 1,
	QUEUED_INT16 = 2,
	QUEUED_INT32 = 3
} QueuedWidth;

#define QUEUED_P_MASK 0x00FFFFFF
#define QUEUED_WIDTH_SHIFT 24

static const Size queued_value_size[] = {sizeof(double), sizeof(uint8), sizeof(int16), sizeof(int32)};

/* the narrowest width that holds every one of x[0 .. p) exactly */
static QueuedWidth
queued_width(const double *x, int p)
{
	double		lo = 0.0,
				hi = 0.0;
	int			j;

	for (j = 0; j < p; j++)
	{
		double		v = x[j];

		if (!(v >= (double) PG_INT32_MIN && v <= (double) PG_INT32_MAX) ||
			v != (double) (int32) v || (v == 0.0 && signbit(v)))
			return QUEUED_DOUBLE;
		lo = Min(lo, v);
		hi = Max(hi, v);
	}
	if (lo >= 0.0 && hi <= 255.0)
		return QUEUED_UINT8;
	if (lo >= (double) PG_INT16_MIN && hi <= (double) PG_INT16_MAX)
		return QUEUED_INT16;
	return QUEUED_INT32;
}

static void
store_queued_values(char *out, const double *x, int p, QueuedWidth width)
{
	int			j;

	for (j = 0; j < p; j++)
	{
		uint8		b;
		int16		s;
		int32		i;

		switch (width)
		{
			case QUEUED_UINT8:
				b = (uint8) x[j];
				out[j] = (char) b;
				break;
			case QUEUED_INT16:
				s = (int16) x[j];
				memcpy(out + sizeof(int16) * j, &s, sizeof(int16));
				break;
			case QUEUED_INT32:
				i = (int32) x[j];
				memcpy(out + sizeof(int32) * j, &i, sizeof(int32));
				break;
			case QUEUED_DOUBLE:
				memcpy(out + sizeof(double) * j, &x[j], sizeof(double));
				break;
		}
	}
}

static void
load_queued_values(double *x, const char *in, int p, QueuedWidth width)
{
	int			j;

	for (j = 0; j < p; j++)
	{
		int16		s;
		int32		i;

		switch (width)
		{
			case QUEUED_UINT8:
				x[j] = (double) (uint8) in[j];
				break;
			case QUEUED_INT16:
				memcpy(&s, in + sizeof(int16) * j, sizeof(int16));
				x[j] = (double) s;
				break;
			case QUEUED_INT32:
				memcpy(&i, in + sizeof(int32) * j, sizeof(int32));
				x[j] = (double) i;
				break;
			case QUEUED_DOUBLE:
				memcpy(&x[j], in + sizeof(double) * j, sizeof(double));
				break;
		}
	}
}

/* a queued row (QueuedRowHeader) of p values raw, label and cohort */
bytea *
encode_queued_row(int p, const double *raw, const char *label, double label_value,
				  const char *cohort)
{
	QueuedRowHeader head;
	QueuedWidth width = p > 0 ? queued_width(raw, p) : QUEUED_DOUBLE;
	Size		values = queued_value_size[width] * p;
	Size		label_len = p > 0 ? strlen(label) : 0;
	Size		cohort_len = p > 0 && cohort != NULL ? strlen(cohort) + 1 : 0;
	Size		size = VARHDRSZ + sizeof(head) + values + label_len + cohort_len;
	bytea	   *out = palloc(size);
	char	   *ptr = VARDATA(out);

	SET_VARSIZE(out, size);
	head.p = p | ((int32) width << QUEUED_WIDTH_SHIFT);
	head.label_len = (int32) label_len;
	head.label_value = label_value;
	memcpy(ptr, &head, sizeof(head));
	store_queued_values(ptr + sizeof(head), raw, p, width);
	memcpy(ptr + sizeof(head) + values, label, label_len);
	if (cohort_len > 0)
	{
		ptr[sizeof(head) + values + label_len] = '\0';
		memcpy(ptr + sizeof(head) + values + label_len + 1, cohort, cohort_len - 1);
	}
	return out;
}

/* whether a queued contribution only counts its row (QueuedRowHeader) */
static bool
queued_row_counts_only(bytea *row)
{
	QueuedRowHeader head;

	if (VARSIZE_ANY_EXHDR(row) != sizeof(head))
		return false;
	memcpy(&head, VARDATA_ANY(row), sizeof(head));
	return head.p == 0 && head.label_len == 0;
}

/* append a contribution to batch, checked against model m */
static void
decode_queued_row(UnlearnModel *m, bytea *row, RowBatch *batch, int *capacity)
{
	QueuedRowHeader head;
	Size		len = VARSIZE_ANY_EXHDR(row);
	const char *ptr = VARDATA_ANY(row);
	bool		counted;
	int			width;
	Size		values;
	Size		tail;

	if (len < sizeof(head))
		corrupt_model(m, "a queued row is truncated");
	memcpy(&head, ptr, sizeof(head));
	if (head.p < 0)
		corrupt_model(m, "a queued row does not match the model");
	width = head.p >> QUEUED_WIDTH_SHIFT;
	counted = head.p == 0 && head.label_len == 0 && len == sizeof(head);
	if (width > QUEUED_INT32)
		corrupt_model(m, "a queued row does not match the model");
	values = queued_value_size[width] * m->def.p;
	if (!counted && ((head.p & QUEUED_P_MASK) != m->def.p || head.label_len < 0 ||
					 len < sizeof(head) + values + head.label_len))
		corrupt_model(m, "a queued row does not match the model");
	/* after the label, a cohort key: a zero byte, then 1 to COHORT_MAX_KEY others */
	tail = counted ? 0 : len - (sizeof(head) + values + head.label_len);
	if (tail > 0)
	{
		const char *key = ptr + sizeof(head) + values + head.label_len;

		if (m->def.cohort == NULL || tail < 2 || tail > COHORT_MAX_KEY + 1 || key[0] != '\0' ||
			memchr(key + 1, '\0', tail - 1) != NULL)
			corrupt_model(m, "a queued row does not match the model");
	}
	row_batch_reserve(batch, m->def.p, capacity);
	if (counted)
	{
		/* a row that only counts: zeros, which nothing reads */
		memset(batch->x + (Size) batch->count * m->def.p, 0, sizeof(double) * m->def.p);
		batch->labels[batch->count] = "";
	}
	else
	{
		load_queued_values(batch->x + (Size) batch->count * m->def.p, ptr + sizeof(head), m->def.p,
						   (QueuedWidth) width);
		if (m->def.nulls == NULLS_IMPUTE)
			mark_missing_values(batch->x + (Size) batch->count * m->def.p, m->def.dims);
		else
			check_feature_values(batch->x + (Size) batch->count * m->def.p, m->def.dims, m->def.name);
		batch->labels[batch->count] = pnstrdup(ptr + sizeof(head) + values, head.label_len);
		if (tail > 0)
			batch->cohorts[batch->count] = pnstrdup(ptr + sizeof(head) + values + head.label_len + 1,
													tail - 1);
	}
	batch->label_values[batch->count] = head.label_value;
	batch->count++;
}

static void
queue_row(UnlearnModel *m, int change, const double *raw, const char *label,
		  double label_value, const char *cohort)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[4];
	char		nulls[4] = "    ";

	if (plan == NULL)
	{
		Oid			types[4] = {TEXTOID, OIDOID, INT2OID, BYTEAOID};

		plan = SPI_prepare("INSERT INTO unlearn.pending (model, owner, change, contribution) "
						   "VALUES ($1, $2, $3, $4)", 4, types);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the queue insert");
	}
	args[0] = CStringGetTextDatum(m->def.name);
	args[1] = ObjectIdGetDatum(m->def.owner);
	args[2] = Int16GetDatum(change);
	if (raw != NULL)
		args[3] = PointerGetDatum(encode_queued_row(m->released.status == MODEL_READY ? m->def.p : 0,
													raw, label, label_value, cohort));
	else
	{
		args[3] = (Datum) 0;
		nulls[3] = 'n';
	}
	if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not queue a row change of model \"%s\"", m->def.name);
	if (m->def.async_apply)
		worker_note_queued();
}

/*
 * Queue one changed row of the trigger's relation for deferred model m.
 * A model whose owner may no longer read its columns is suspended first,
 * as the statement triggers do: its owner, who reads its queue, then
 * gets counts only.
 */
static void
defer_row_change(UnlearnModel *m, TriggerData *td, Oid caller)
{
	SlotRowReader *reader;
	double	   *old_raw = NULL;
	double	   *new_raw = NULL;
	char	   *old_label = NULL;
	char	   *new_label = NULL;
	double		old_value = 0.0;
	double		new_value = 0.0;
	bool		old_in = false;
	bool		new_in = false;
	bool		old_failed = false;
	bool		new_failed = false;
	char	   *old_cohort = NULL;
	char	   *new_cohort = NULL;

	suspend_if_owner_may_not_read(m, caller);
	reader = slot_row_reader_begin(m, td->tg_relation);
	if (TRIGGER_FIRED_BY_DELETE(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		old_raw = palloc0(sizeof(double) * m->def.p);
		old_in = slot_row_decode_guarded(reader, td->tg_trigslot, old_raw, &old_label,
										 &old_value, &old_failed);
		old_cohort = slot_row_cohort(reader, td->tg_trigslot);
		if (slot_row_filtered(reader))
			old_raw = NULL;		/* no row of the model's, not even skipped */
	}
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		TupleTableSlot *slot = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newslot :
			td->tg_trigslot;

		new_raw = palloc0(sizeof(double) * m->def.p);
		new_in = slot_row_decode_guarded(reader, slot, new_raw, &new_label, &new_value,
										 &new_failed);
		new_cohort = slot_row_cohort(reader, slot);
		if (slot_row_filtered(reader))
			new_raw = NULL;
	}
	slot_row_reader_end(reader);
	if (old_failed || new_failed)
		suspend_for_failed_expression(m, caller);

	/* an UPDATE that leaves the model's view of the row as it was */
	if (old_raw != NULL && new_raw != NULL && old_in == new_in &&
		(!old_in || (memcmp(old_raw, new_raw, sizeof(double) * m->def.dims) == 0 &&
					 strcmp(old_label, new_label) == 0 &&
					 (old_cohort == NULL) == (new_cohort == NULL) &&
					 (old_cohort == NULL || strcmp(old_cohort, new_cohort) == 0))))
		return;
	if (old_raw != NULL)
		queue_row(m, -1, old_in ? old_raw : NULL, old_label, old_value, old_cohort);
	if (new_raw != NULL)
		queue_row(m, 1, new_in ? new_raw : NULL, new_label, new_value, new_cohort);
}

/*
 * unlearn._defer(): AFTER INSERT OR UPDATE OR DELETE ... FOR EACH ROW on a
 * table with deferred models (catalog_attach_triggers), cloned to each of
 * its partitions.  Immediate models of the table are the statement
 * triggers' (trigger.c).
 */
Datum
unlearn_defer_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	ExtensionContext ctx;
	List	   *refs;
	ListCell   *lc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._defer() must be called as a trigger")));
	if (strcmp(td->tg_trigger->tgname, "unlearn_after_row") != 0 ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._defer() fired by trigger \"%s\", which unlearn did not create",
						td->tg_trigger->tgname),
				 errhint("Only unlearn_train() attaches this function to a table.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	/* a REPEATABLE READ writer queues for the models that exist now */
	catalog_read_latest(IsolationUsesXactSnapshot());
	PG_TRY();
	{
		refs = cached_models_of_relation(trained_relation(td->tg_relation));
		foreach(lc, refs)
		{
			ModelRef   *ref = (ModelRef *) lfirst(lc);
			UnlearnModel *m;

			if (!ref->deferred)
				continue;
			m = cached_model_for_change(ref->name);
			if (m != NULL)
				defer_row_change(m, td, ctx.caller);
		}
	}
	PG_FINALLY();
	{
		catalog_read_latest(false);
	}
	PG_END_TRY();
	leave_extension_context(&ctx);
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * Read m's queue (the entries the current snapshot sees), apply it to m as
 * one statement's rows, and delete those entries.  Returns how many there
 * were.
 */
static int64
apply_queue(UnlearnModel *m, Oid caller)
{
	bool		citus = m->def.async_apply && citus_distribution(m->def.source) == 'h';
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	RowBatch   *removed;
	RowBatch   *added;
	int			removed_capacity = 64;
	int			added_capacity = 64;
	int64		skipped_delta = 0;
	int64		unreadable = 0;
	int64		entries;
	uint64		i;

	args[0] = CStringGetTextDatum(m->def.name);
	/* a distributed table's shards queue in its own queue (citus_queue.c) */
	if (citus)
		citus_take_queue(m->def.name, m->def.source);
	else if (SPI_execute_with_args("SELECT change, contribution FROM unlearn.pending "
								   "WHERE model = $1 ORDER BY id",
								   1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue of model \"%s\"", m->def.name);
	entries = SPI_processed;
	if (entries == 0)
		return 0;
	removed = new_row_batch(m->def.p, removed_capacity);
	added = new_row_batch(m->def.p, added_capacity);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int			change = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i],
														 SPI_tuptable->tupdesc, 1, &isnull));
		Datum		row = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (change != 1 && change != -1)
			corrupt_model(m, "a queued change is neither -1 nor 1");
		if (isnull)
			skipped_delta += change;
		else if (m->released.status == MODEL_READY && queued_row_counts_only(DatumGetByteaPP(row)))
			unreadable++;
		else if (change < 0)
			decode_queued_row(m, DatumGetByteaPP(row), removed, &removed_capacity);
		else
			decode_queued_row(m, DatumGetByteaPP(row), added, &added_capacity);
	}
	/*
	 * a row queued while the model released nothing carries no values: if
	 * the model has become ready since (an async apply retrained it while
	 * the row was being queued), the queue cannot be applied row by row,
	 * and the model reads its table again
	 */
	apply_queued_rows(m, removed, added, skipped_delta,
					  unreadable > 0 ? "A row was queued while the model released nothing." : NULL,
					  caller);
	catalog_clear_queue(m->def.name);
	return entries;
}

/*
 * unlearn._apply_pending(model): apply the queue in one step.  The
 * model's owner or the table's owner may, so that no model owner can hold
 * an erasure back from the table's owner.  The table is locked (SHARE):
 * no writer can queue while it runs, so it consumes exactly the entries
 * by which the table differs from the model.
 */
Datum
unlearn_apply_pending(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	UnlearnModel *m;
	ExtensionContext ctx;

	state_store_require();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	(void) lock_source_for_owners(name, ctx.caller,
								  "The owner of a table can apply the queued changes of every model trained on it.");
	m = load_model_for_change(name, false);
	if (m == NULL)
	{
		/* quarantined: it releases nothing until replaced, which retrains */
		catalog_clear_queue(name);
		leave_extension_context(&ctx);
		SPI_finish();
		PG_RETURN_VOID();
	}
	if (!m->def.deferred)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" applies its changes immediately", name),
				 errdetail("Only a model trained with options => '{\"removal\": \"deferred\"}' or '{\"removal\": \"async\"}' queues changes."),
				 errhint("Its table's statements have already changed it.")));
	(void) apply_queue(m, ctx.caller);
	if (m->def.async_apply)
		catalog_note_apply(name, NULL);
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * The maintenance worker's apply of async model name's queue, in the
 * current transaction, which runs under REPEATABLE READ: the queue it
 * reads, the rows a re-anchoring, rebuild or retrain reads and the entries
 * it deletes are those of one snapshot, so the model plus the entries left
 * reflects the table at every commit, and no lock keeps a writer out (an
 * entry committed meanwhile is neither read nor deleted).  The model row
 * is locked as a statement's change locks it.  Returns the entries
 * applied; a model that is no longer async, or is quarantined, none.
 */
int64
apply_async_queue(const char *name)
{
	UnlearnModel *m;
	int64		entries;

	Assert(IsolationUsesXactSnapshot());
	m = load_model_for_change(name, false);
	if (m == NULL || !m->def.async_apply)
		return 0;
	entries = apply_queue(m, InvalidOid);
	/* a distributed table's model is visited whether or not it has entries */
	if (entries > 0 || citus_distribution(m->def.source) != 'h')
		catalog_note_apply(name, NULL);
	return entries;
}

/* whether a distributed table's model has queued entries, asked in a subtransaction */
typedef struct QueueProbe
{
	const char *name;
	Oid			source;
	bool		has_entries;
} QueueProbe;

static void
probe_queue(void *arg)
{
	QueueProbe *probe = (QueueProbe *) arg;

	probe->has_entries = citus_queue_has_entries(probe->name, probe->source);
}

/* Citus's refusal to read, as the extension's owner, shards this transaction wrote as another role */
static bool
written_by_another_role(const ErrorData *edata, void *arg)
{
	return edata->sqlerrcode == ERRCODE_ACTIVE_SQL_TRANSACTION;
}

/*
 * Whether model's queue on distributed table source is empty; false, with
 * a NOTICE, in a transaction that wrote the table as another role, whose
 * changes are queued only when it commits anyway.
 */
static bool
citus_queue_empty(const char *name, Oid source, bool *unreadable)
{
	QueueProbe	probe = {name, source, false};
	ErrorData  *edata = run_in_subtransaction(probe_queue, &probe, written_by_another_role);

	*unreadable = edata != NULL;
	if (edata == NULL)
		return !probe.has_entries;
	FreeErrorData(edata);
	ereport(NOTICE,
			(errmsg("the queue of model \"%s\" cannot be read in a transaction that wrote its distributed table",
					name),
			 errdetail("This transaction's changes reach the model's queue when it commits."),
			 errhint("Call unlearn_wait after the transaction that erases the rows has committed.")));
	return false;
}

/*
 * unlearn._wait(model, timeout): wait until every change of async model's
 * queue that the call's first snapshot sees is applied (their entries
 * gone), at most timeout seconds; true if they are.  Those entries have ids
 * up to the largest it sees; one with a smaller id committed later is
 * waited for too.  The caller must be able to read the model's status; the
 * wait hurries the worker (worker_request_apply).
 */
Datum
unlearn_wait(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	double		timeout = PG_GETARG_FLOAT8(1);
	ExtensionContext ctx;
	Oid			owner,
				source;
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	Datum		args[2];
	bool		isnull;
	bool		done = true;
	TimestampTz deadline;
	TimestampTz asked = 0;
	UnlearnModel *m;

	if (isnan(timeout) || timeout < 0 || timeout > 86400)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout must be between 0 and 86400 seconds")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("unlearn_wait cannot run under REPEATABLE READ or SERIALIZABLE"),
				 errdetail("Its snapshot would never see the worker's apply."),
				 errhint("Wait in a READ COMMITTED transaction.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	if (!catalog_model_identity(name, false, true, &owner, &source) ||
		!may_read_model(name, owner, ctx.caller, false))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("unlearn.status lists the models you may read.")));
	m = catalog_load_model(name, false, false, false);
	if (m->def.deferred && !m->def.async_apply)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" applies its queue when asked", name),
				 errdetail("No worker applies the queue of a model trained with \"removal\": \"deferred\"."),
				 errhint("Apply it with unlearn_apply_pending('%s').", name)));
	if (m->def.async_apply)
	{
		int64		last;
		bool		citus;
		bool		unreadable = false;

		if (!worker_applies())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no maintenance worker applies the queue of model \"%s\"", name),
					 errdetail("unlearn.worker is off, or unlearn is not in shared_preload_libraries."),
					 errhint("Apply it with unlearn_apply_pending('%s').", name)));
		args[0] = CStringGetTextDatum(name);
		/* a distributed table's queue has no order: wait for it to be empty */
		citus = citus_distribution(source) == 'h';
		if (citus)
			done = citus_queue_empty(name, source, &unreadable);
		else if (SPI_execute_with_args("SELECT max(id) FROM unlearn.pending WHERE model = $1",
									   1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the queue of model \"%s\"", name);
		else
		{
			last = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											   &isnull));
			done = isnull;
			args[1] = Int64GetDatum(last);
		}
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), (int64) (timeout * 1000));
		while (!done && !unreadable)
		{
			/* hurry the worker now and then: a visit finds every due queue */
			if (TimestampDifferenceExceeds(asked, GetCurrentTimestamp(), WAIT_REQUEST_MS))
			{
				worker_request_apply();
				asked = GetCurrentTimestamp();
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 WAIT_POLL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			if (citus)
				done = citus_queue_empty(name, source, &unreadable);
			else if (SPI_execute_with_args("SELECT 1 FROM unlearn.pending WHERE model = $1 AND id <= $2 LIMIT 1",
										   2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not read the queue of model \"%s\"", name);
			else
				done = SPI_processed == 0;
			if (!done && GetCurrentTimestamp() >= deadline)
				break;
		}
	}
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_BOOL(done);
}
