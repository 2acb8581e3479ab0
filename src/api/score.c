/*-------------------------------------------------------------------------
 *
 * score.c
 *	  Scoring a whole table: unlearn_score(model, source).
 *
 * One query, run as the caller through SPI, reads the model's columns and
 * the table's primary key: the caller's row-level security policies and
 * column privileges apply as to any SELECT of theirs.  Its rows go to a
 * DestReceiver of our own instead of SPI's tuple table, so each row is
 * deformed once (the scan's projection) and never copied.  The query takes
 * one of two forms, chosen by its plan:
 *
 *	 serial	  SELECT NULL, <features>, <key> FROM t: the receiver decodes
 *			  the features, scores them and stores (key, label, score);
 *	 parallel SELECT unlearn._score_columns(model, <key names>, <features>,
 *			  <key>) FROM t: each worker scores its rows in the projection
 *			  below the Gather (unlearn_score_columns), and the receiver
 *			  stores the (key, label, score) rows it gets.
 *
 * The parallel form is planned first, with the caller's parallel settings;
 * if its plan runs in no worker, the serial form runs instead, which saves
 * a function call and a composite per row.  A model whose features and key
 * exceed FUNC_MAX_ARGS - 2 columns always takes the serial form.
 *
 * The key is a jsonb object {"column": "text", ...} of the primary key's
 * columns, each as its type's output text (a type's output function is C,
 * which only a superuser installs; a cast could be the table owner's SQL).
 * The query runs under pin_expression_settings, so feature expressions
 * mean what they meant at training and the key's text does not depend on
 * the session (dates in ISO, times in UTC).
 *
 * Cost: one scan, O(d + p K) per row, plus the key's output functions;
 * with W workers, the leader's share is one tuple copy per row.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(unlearn_score_by_key);
PG_FUNCTION_INFO_V1(unlearn_score);
PG_FUNCTION_INFO_V1(unlearn_score_columns);

/* the primary key's columns of a relation */
typedef struct PrimaryKey
{
	int			ncolumns;
	char	  **names;
	Oid		   *types;			/* each column's type */
	FmgrInfo   *output;			/* and its output function */
} PrimaryKey;

/* the receiver of the scoring query's rows */
typedef struct KeyedScorer
{
	DestReceiver pub;
	PredictModel *pm;
	PrimaryKey *key;
	int			first_key;		/* the key's first column in the query row */
	bool		scored_in_query;	/* the parallel form: rows arrive scored */
	Oid			keyed_score_type;	/* their type, unlearn.keyed_score */
	ReturnSetInfo *rsinfo;
	MemoryContext row_cxt;		/* reset after every row */
} KeyedScorer;

/* unlearn_score_columns's state across calls */
typedef struct ColumnScorer
{
	PredictModel *pm;
	PrimaryKey	key;
	Datum	   *columns;		/* label slot (unused), then the features */
	bool	   *column_null;
	Datum	   *key_values;
	bool	   *key_null;
	TupleDesc	result;			/* unlearn.keyed_score */
} ColumnScorer;

/* arguments of unlearn._score_columns before the columns */
#define SCORE_COLUMNS_FIXED_ARGS 2

/* room for n key columns, in the current memory context */
static void
key_alloc(PrimaryKey *key, int n)
{
	key->ncolumns = n;
	key->names = palloc(sizeof(char *) * Max(n, 1));
	key->types = palloc(sizeof(Oid) * Max(n, 1));
	key->output = palloc(sizeof(FmgrInfo) * Max(n, 1));
}

/* key column i: its name, its type and that type's output function */
static void
key_column_set(PrimaryKey *key, int i, const char *name, Oid type)
{
	Oid			output;
	bool		varlena;

	key->names[i] = pstrdup(name);
	key->types[i] = type;
	getTypeOutputInfo(type, &output, &varlena);
	fmgr_info(output, &key->output[i]);
}

/*
 * The primary key of relid, or an error (42809) for a relation without one.
 */
static PrimaryKey *
primary_key_of(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Oid			index = RelationGetPrimaryKeyIndex(rel);
	PrimaryKey *key = palloc0(sizeof(PrimaryKey));
	HeapTuple	tuple;
	Form_pg_index form;
	int			i;

	if (!OidIsValid(index))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation %s has no primary key", relation_qualified_name(relid)),
				 errhint("Select the columns that identify a row yourself: SELECT t.id, s.* FROM t, unlearn_score_row('model', t) s.")));
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for index %u", index);
	form = (Form_pg_index) GETSTRUCT(tuple);
	key_alloc(key, form->indnkeyatts);
	for (i = 0; i < key->ncolumns; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), form->indkey.values[i] - 1);

		key_column_set(key, i, NameStr(att->attname), att->atttypid);
	}
	ReleaseSysCache(tuple);
	/* the lock stays until the transaction ends: no DDL between here and the scan */
	table_close(rel, NoLock);
	return key;
}

/* the key columns, as the scoring query's trailing select list */
static char *
key_select_list(PrimaryKey *key)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < key->ncolumns; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_identifier(key->names[i]));
	return buf.data;
}

/* {"column": "text", ...} of a row's key, from its key columns' values */
static Datum
key_jsonb(PrimaryKey *key, const Datum *values, const bool *isnull)
{
	JsonbParseState *state = NULL;
	JsonbValue *object;
	int			i;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < key->ncolumns; i++)
	{
		JsonbValue	name;
		JsonbValue	value;

		name.type = jbvString;
		name.val.string.val = key->names[i];
		name.val.string.len = strlen(key->names[i]);
		pushJsonbValue(&state, WJB_KEY, &name);
		if (isnull[i])
			value.type = jbvNull;
		else
		{
			value.type = jbvString;
			value.val.string.val = OutputFunctionCall(&key->output[i], values[i]);
			value.val.string.len = strlen(value.val.string.val);
		}
		pushJsonbValue(&state, WJB_VALUE, &value);
	}
	object = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(object));
}

/*
 * The label and score of a row of model columns (label slot first), into
 * out[1] and out[2]: both NULL for a row skipped under "nulls": "skip".
 */
static void
score_model_columns(PredictModel *pm, const Datum *columns, const bool *column_null,
					Datum *out, bool *out_null)
{
	int			best;

	out_null[1] = out_null[2] = true;
	if (!decode_model_row(pm->columns, columns, column_null, pm->row, NULL, NULL))
		return;
	out[2] = Float8GetDatum(score_row(pm, &best));
	out_null[2] = false;
	if (best >= 0)
	{
		out[1] = CStringGetTextDatum(pm->classes[best]);
		out_null[1] = false;
	}
}

/*
 * One row of the query, into the result store as (key, label, score):
 * decoded and scored here (serial form) or as it arrives (parallel form).
 */
static bool
keyed_scorer_receive(TupleTableSlot *slot, DestReceiver *self)
{
	KeyedScorer *ks = (KeyedScorer *) self;
	MemoryContext old = MemoryContextSwitchTo(ks->row_cxt);

	CHECK_FOR_INTERRUPTS();
	slot_getallattrs(slot);
	if (ks->scored_in_query)
	{
		HeapTupleHeader scored;
		HeapTupleData tuple;

		if (slot->tts_isnull[0])
			elog(ERROR, "unlearn_score: a scored row is null");
		scored = DatumGetHeapTupleHeader(slot->tts_values[0]);
		tuple.t_len = HeapTupleHeaderGetDatumLength(scored);
		ItemPointerSetInvalid(&tuple.t_self);
		tuple.t_tableOid = InvalidOid;
		tuple.t_data = scored;
		/* unlearn.keyed_score has the result's columns (checked at startup) */
		tuplestore_puttuple(ks->rsinfo->setResult, &tuple);
	}
	else
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		int			ncolumns = ks->pm->columns->def.nfeatures + 1;
		Datum	   *columns = palloc(sizeof(Datum) * ncolumns);
		bool	   *column_null = palloc(sizeof(bool) * ncolumns);

		/* the query row is build_feature_select's: label slot, features, key */
		values[0] = key_jsonb(ks->key, slot->tts_values + ks->first_key,
							  slot->tts_isnull + ks->first_key);
		memcpy(columns, slot->tts_values, sizeof(Datum) * ncolumns);
		memcpy(column_null, slot->tts_isnull, sizeof(bool) * ncolumns);
		expand_category_columns(ks->pm->columns, columns, column_null);
		score_model_columns(ks->pm, columns, column_null, values, nulls);
		tuplestore_putvalues(ks->rsinfo->setResult, ks->rsinfo->setDesc, values, nulls);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(ks->row_cxt);
	return true;
}

/*
 * The query's columns must have the types bound before it was planned:
 * its relation is named as text, so a table swapped by name (a schema
 * renamed) would otherwise have its values read as other types.  The
 * parallel form's values are typed by the plan itself, in the workers.
 */
static void
keyed_scorer_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	KeyedScorer *ks = (KeyedScorer *) self;

	if (!ks->scored_in_query)
		check_feature_select_types(ks->pm->columns, typeinfo, false, ks->key->types,
								   ks->key->ncolumns);
	else if (typeinfo->natts != 1 ||
			 TupleDescAttr(typeinfo, 0)->atttypid != ks->keyed_score_type)
		elog(ERROR, "unlearn_score: the scoring query returned another row type");
}

static void
keyed_scorer_shutdown(DestReceiver *self)
{
}

static void
keyed_scorer_destroy(DestReceiver *self)
{
}

/* unlearn.keyed_score, or InvalidOid on a catalog before 0.8.0 */
static Oid
keyed_score_type(void)
{
	Oid			schema = get_namespace_oid("unlearn", true);

	if (!OidIsValid(schema))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						   CStringGetDatum("keyed_score"), ObjectIdGetDatum(schema));
}

/*
 * The parallel form of the scoring query: every feature and key column is
 * an argument of unlearn._score_columns, after the model's name and the
 * key's column names.
 */
static char *
score_columns_select(UnlearnModel *m, PrimaryKey *key, const char *relation)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfo(&buf, "SELECT unlearn._score_columns(%s, ARRAY[",
					 quote_literal_cstr(m->def.name));
	for (i = 0; i < key->ncolumns; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_literal_cstr(key->names[i]));
	appendStringInfoString(&buf, "]::text[]");
	for (i = 0; i < m->def.nfeatures; i++)
		appendStringInfo(&buf, ", %s", feature_sql(m, i));
	for (i = 0; i < key->ncolumns; i++)
		appendStringInfo(&buf, ", %s", quote_identifier(key->names[i]));
	appendStringInfo(&buf, ") FROM %s", relation);
	return buf.data;
}

/* whether a prepared query's plan runs in parallel workers */
static bool
plan_uses_workers(SPIPlanPtr plan)
{
	CachedPlan *cplan = SPI_plan_get_cached_plan(plan);
	bool		parallel = false;
	ListCell   *lc;

	if (cplan == NULL)
		return false;
	foreach(lc, cplan->stmt_list)
	{
		PlannedStmt *stmt = lfirst_node(PlannedStmt, lc);

		if (stmt->planTree != NULL &&
			(IsA(stmt->planTree, Gather) || IsA(stmt->planTree, GatherMerge)))
			parallel = true;
	}
	/* an unsaved plan's reference is owned by no resource owner */
	ReleaseCachedPlan(cplan, NULL);
	return parallel;
}

/*
 * unlearn_score(model, source): the primary key (jsonb), predicted label
 * and score of every row of a table (default: the model's source) that the
 * caller may read; label and score are NULL for a row skipped under
 * "nulls": "skip".
 */
Datum
unlearn_score_by_key(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPIExecuteOptions options;
	KeyedScorer ks;
	UnlearnModel *m;
	SPIPlanPtr	plan = NULL;
	Oid			relid;
	const char *relation;
	int			level;
	int			rc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	InitMaterializedSRF(fcinfo, 0);
	memset(&ks, 0, sizeof(ks));
	ks.pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);
	m = model_on_relation(ks.pm, fcinfo, 1, false, &relid);
	relation = relation_qualified_name(relid);
	ks.key = primary_key_of(relid);
	ks.first_key = 1 + m->def.nfeatures;
	ks.rsinfo = rsinfo;
	ks.keyed_score_type = keyed_score_type();
	ks.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "unlearn_score row",
									   ALLOCSET_DEFAULT_SIZES);
	ks.pub.receiveSlot = keyed_scorer_receive;
	ks.pub.rStartup = keyed_scorer_startup;
	ks.pub.rShutdown = keyed_scorer_shutdown;
	ks.pub.rDestroy = keyed_scorer_destroy;
	ks.pub.mydest = DestNone;

	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.dest = &ks.pub;
	level = pin_expression_settings();
	if (OidIsValid(ks.keyed_score_type) &&
		SCORE_COLUMNS_FIXED_ARGS + m->def.nfeatures + ks.key->ncolumns <= FUNC_MAX_ARGS)
	{
		SPIPrepareOptions prepare;

		memset(&prepare, 0, sizeof(prepare));
		prepare.cursorOptions = CURSOR_OPT_PARALLEL_OK;
		plan = SPI_prepare_extended(score_columns_select(m, ks.key, relation), &prepare);
		if (plan == NULL)
			elog(ERROR, "unlearn_score: preparing the scoring query failed: %s",
				 SPI_result_code_string(SPI_result));
		if (!plan_uses_workers(plan))
		{
			SPI_freeplan(plan);
			plan = NULL;
		}
	}
	ks.scored_in_query = plan != NULL;
	ereport(DEBUG1,
			(errmsg_internal("unlearn_score of model \"%s\" scores %s", m->def.name,
							 plan != NULL ? "in parallel workers" : "in this backend")));
	if (plan != NULL)
		rc = SPI_execute_plan_extended(plan, &options);
	else
		rc = SPI_execute_extended(build_feature_select(m, relation, key_select_list(ks.key)),
								  &options);
	/* a query whose rows go to a receiver of DestNone reports SPI_OK_UTILITY */
	if (rc < 0)
		elog(ERROR, "unlearn_score: the scoring query failed");
	unpin_expression_settings(level);
	/* row_cxt and the plan are in SPI's context, which SPI_finish deletes */
	SPI_finish();
	return (Datum) 0;
}

/*
 * unlearn._score_columns(model, key_columns, VARIADIC columns): the
 * parallel form's per-row scorer.  The columns are the model's features,
 * then the key's columns named by key_columns; the result is the row of
 * unlearn_score, (key, label, score).  Each argument's type is the one the
 * plan gives it, so the values are read as what they are; the features'
 * types must be ones the model reads.  O(d + p K) per row after the first.
 */
static ColumnScorer *
bind_column_scorer(FunctionCallInfo fcinfo, const char *name)
{
	MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
	MemoryContext old;
	ColumnScorer *cs;
	UnlearnModel *m;
	TupleDesc	result_type;
	Datum	   *names;
	bool	   *name_null;
	int			nnames;
	int			j;

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unlearn._score_columns takes its columns as separate arguments, not a VARIADIC array")));
	cs = MemoryContextAllocZero(cxt, sizeof(ColumnScorer));
	cs->pm = load_predict_model(name, cxt);
	m = cs->pm->columns;
	old = MemoryContextSwitchTo(cxt);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT,
					  &names, &name_null, &nnames);
	if (PG_NARGS() != SCORE_COLUMNS_FIXED_ARGS + m->def.nfeatures + nnames)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has %d feature columns, and %d key columns were named, but %d columns were given",
						m->def.name, m->def.nfeatures, nnames,
						PG_NARGS() - SCORE_COLUMNS_FIXED_ARGS),
				 errhint("Pass the feature columns in the model's order, then the key columns.")));
	for (j = 0; j < m->def.nfeatures; j++)
	{
		Oid			t = get_fn_expr_argtype(fcinfo->flinfo, SCORE_COLUMNS_FIXED_ARGS + j);

		if (!OidIsValid(t))
			elog(ERROR, "unlearn._score_columns: argument types are unknown");
		if (!feature_type_fits(m, t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("feature \"%s\" has type %s, which does not fit model \"%s\"",
							m->def.features[j], format_type_be(t), m->def.name),
					 errhint("Pass each feature as the model's table has it, or call unlearn_score.")));
		m->def.column_types[j] = t;
	}
	key_alloc(&cs->key, nnames);
	for (j = 0; j < nnames; j++)
	{
		Oid			t = get_fn_expr_argtype(fcinfo->flinfo,
											SCORE_COLUMNS_FIXED_ARGS + m->def.nfeatures + j);

		if (name_null[j])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a key column name must not be null")));
		if (!OidIsValid(t))
			elog(ERROR, "unlearn._score_columns: argument types are unknown");
		/* in cxt, the current context here */
		key_column_set(&cs->key, j, TextDatumGetCString(names[j]), t);
	}
	cs->columns = palloc0(sizeof(Datum) * (m->def.nfeatures + 1));
	cs->column_null = palloc0(sizeof(bool) * (m->def.nfeatures + 1));
	cs->key_values = palloc0(sizeof(Datum) * Max(nnames, 1));
	cs->key_null = palloc0(sizeof(bool) * Max(nnames, 1));
	if (get_call_result_type(fcinfo, NULL, &result_type) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "unlearn._score_columns must return a composite type");
	cs->result = BlessTupleDesc(CreateTupleDescCopy(result_type));
	MemoryContextSwitchTo(old);
	return cs;
}

Datum
unlearn_score_columns(PG_FUNCTION_ARGS)
{
	ColumnScorer *cs = (ColumnScorer *) fcinfo->flinfo->fn_extra;
	char	   *name;
	UnlearnModel *m;
	Datum		values[3];
	bool		nulls[3];
	int			j;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model and key_columns must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (cs == NULL || strcmp(cs->pm->name, name) != 0)
	{
		cs = bind_column_scorer(fcinfo, name);
		fcinfo->flinfo->fn_extra = cs;
	}
	m = cs->pm->columns;
	for (j = 0; j < m->def.nfeatures; j++)
	{
		cs->columns[j + 1] = PG_GETARG_DATUM(SCORE_COLUMNS_FIXED_ARGS + j);
		cs->column_null[j + 1] = PG_ARGISNULL(SCORE_COLUMNS_FIXED_ARGS + j);
	}
	for (j = 0; j < cs->key.ncolumns; j++)
	{
		cs->key_values[j] = PG_GETARG_DATUM(SCORE_COLUMNS_FIXED_ARGS + m->def.nfeatures + j);
		cs->key_null[j] = PG_ARGISNULL(SCORE_COLUMNS_FIXED_ARGS + m->def.nfeatures + j);
	}
	values[0] = key_jsonb(&cs->key, cs->key_values, cs->key_null);
	nulls[0] = false;
	score_model_columns(cs->pm, cs->columns, cs->column_null, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cs->result, values, nulls)));
}

/*
 * unlearn_score(model, source) of the 0.3.0 catalog: (row_id, label,
 * score) for every row of a table that has the model's feature columns,
 * until ALTER EXTENSION UPDATE replaces it.
 */
Datum
unlearn_score(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PredictModel *pm;
	UnlearnModel *m;
	Oid			relid;
	Portal		portal;
	char	   *query;
	Oid			ctid_type = TIDOID;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	InitMaterializedSRF(fcinfo, 0);
	pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);
	m = model_on_relation(pm, fcinfo, 1, false, &relid);
	query = build_feature_select(m, relation_qualified_name(relid), "ctid");
	portal = SPI_cursor_open_with_args(NULL, query, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		check_feature_select_types(m, SPI_tuptable->tupdesc, false, &ctid_type, 1);
		for (i = 0; i < SPI_processed; i++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};
			bool		isnull;
			int			best;
			double		score;

			CHECK_FOR_INTERRUPTS();
			decode_spi_row(m, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, pm->row,
						   NULL, NULL);
			score = score_row(pm, &best);
			values[0] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									  SPI_tuptable->tupdesc->natts, &isnull);
			if (best >= 0)
				values[1] = CStringGetTextDatum(pm->classes[best]);
			else
				nulls[1] = true;
			values[2] = Float8GetDatum(score);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	return (Datum) 0;
}
