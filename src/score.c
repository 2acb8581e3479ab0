/*-------------------------------------------------------------------------
 *
 * score.c
 *	  Scoring a whole table: unlearn_score(model, source).
 *
 * One query, run as the caller through SPI, reads the model's columns and
 * the table's primary key: the caller's row-level security policies and
 * column privileges apply as to any SELECT of theirs, and the planner may
 * scan in parallel.  Its rows go to a DestReceiver of our own instead of
 * SPI's tuple table, so each row is deformed once (the scan's projection)
 * and never copied: the receiver decodes the features, scores them and
 * puts (key, label, score) in the function's result store.
 *
 * The key is a jsonb object {"column": "text", ...} of the primary key's
 * columns, each as its type's output text (a type's output function is C,
 * which only a superuser installs; a cast could be the table owner's SQL).
 * The query runs under pin_expression_settings, so feature expressions
 * mean what they meant at training and the key's text does not depend on
 * the session (dates in ISO, times in UTC).
 *
 * Cost: one scan, O(d + p K) per row, plus the key's output functions.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(unlearn_score_by_key);
PG_FUNCTION_INFO_V1(unlearn_score);

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
	ReturnSetInfo *rsinfo;
	MemoryContext row_cxt;		/* reset after every row */
} KeyedScorer;

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
	key->ncolumns = form->indnkeyatts;
	key->names = palloc(sizeof(char *) * key->ncolumns);
	key->types = palloc(sizeof(Oid) * key->ncolumns);
	key->output = palloc(sizeof(FmgrInfo) * key->ncolumns);
	for (i = 0; i < key->ncolumns; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), form->indkey.values[i] - 1);
		Oid			output;
		bool		varlena;

		key->names[i] = pstrdup(NameStr(att->attname));
		key->types[i] = att->atttypid;
		getTypeOutputInfo(att->atttypid, &output, &varlena);
		fmgr_info(output, &key->output[i]);
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

/* {"column": "text", ...} of a row's key */
static Datum
key_jsonb(KeyedScorer *ks, TupleTableSlot *slot)
{
	JsonbParseState *state = NULL;
	JsonbValue *object;
	int			i;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < ks->key->ncolumns; i++)
	{
		int			column = ks->first_key + i;
		JsonbValue	name;
		JsonbValue	value;

		name.type = jbvString;
		name.val.string.val = ks->key->names[i];
		name.val.string.len = strlen(ks->key->names[i]);
		pushJsonbValue(&state, WJB_KEY, &name);
		if (slot->tts_isnull[column])
			value.type = jbvNull;
		else
		{
			value.type = jbvString;
			value.val.string.val = OutputFunctionCall(&ks->key->output[i],
													  slot->tts_values[column]);
			value.val.string.len = strlen(value.val.string.val);
		}
		pushJsonbValue(&state, WJB_VALUE, &value);
	}
	object = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(object));
}

/* one row of the query: decode, score, store (key, label, score) */
static bool
keyed_scorer_receive(TupleTableSlot *slot, DestReceiver *self)
{
	KeyedScorer *ks = (KeyedScorer *) self;
	PredictModel *pm = ks->pm;
	MemoryContext old = MemoryContextSwitchTo(ks->row_cxt);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	CHECK_FOR_INTERRUPTS();
	slot_getallattrs(slot);
	values[0] = key_jsonb(ks, slot);
	/* the query row is build_feature_select's: label slot, features, key */
	if (decode_model_row(pm->columns, slot->tts_values, slot->tts_isnull, pm->row, NULL, NULL))
	{
		int			best;

		values[2] = Float8GetDatum(score_row(pm, &best));
		if (best >= 0)
			values[1] = CStringGetTextDatum(pm->classes[best]);
		else
			nulls[1] = true;
	}
	else
		nulls[1] = nulls[2] = true;
	tuplestore_putvalues(ks->rsinfo->setResult, ks->rsinfo->setDesc, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(ks->row_cxt);
	return true;
}

/*
 * The query's columns must have the types bound before it was planned:
 * its relation is named as text, so a table swapped by name (a schema
 * renamed) would otherwise have its values read as other types.
 */
static void
keyed_scorer_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	KeyedScorer *ks = (KeyedScorer *) self;

	check_feature_select_types(ks->pm->columns, typeinfo, false, ks->key->types,
							   ks->key->ncolumns);
}

static void
keyed_scorer_shutdown(DestReceiver *self)
{
}

static void
keyed_scorer_destroy(DestReceiver *self)
{
}

/*
 * unlearn_score(model, source): the primary key (jsonb), predicted label
 * and score of every row of a table (default: the model's source) that the
 * caller may read; label and score are NULL for a row skipped under
 * nulls => 'skip'.
 */
Datum
unlearn_score_by_key(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPIExecuteOptions options;
	KeyedScorer ks;
	UnlearnModel *m;
	Oid			relid;
	char	   *query;
	int			level;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	InitMaterializedSRF(fcinfo, 0);
	memset(&ks, 0, sizeof(ks));
	ks.pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);
	m = model_on_relation(ks.pm, fcinfo, 1, false, &relid);
	ks.key = primary_key_of(relid);
	ks.first_key = 1 + m->nfeatures;
	ks.rsinfo = rsinfo;
	ks.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "unlearn_score row",
									   ALLOCSET_DEFAULT_SIZES);
	ks.pub.receiveSlot = keyed_scorer_receive;
	ks.pub.rStartup = keyed_scorer_startup;
	ks.pub.rShutdown = keyed_scorer_shutdown;
	ks.pub.rDestroy = keyed_scorer_destroy;
	ks.pub.mydest = DestNone;
	query = build_feature_select(m, relation_qualified_name(relid), key_select_list(ks.key));

	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.dest = &ks.pub;
	level = pin_expression_settings();
	/* a query whose rows go to a receiver of DestNone reports SPI_OK_UTILITY */
	if (SPI_execute_extended(query, &options) < 0)
		elog(ERROR, "unlearn_score: the scoring query failed");
	unpin_expression_settings(level);
	/* row_cxt is a child of SPI's context, which SPI_finish deletes */
	SPI_finish();
	return (Datum) 0;
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
