/*-------------------------------------------------------------------------
 *
 * predict.c
 *	  Prediction with a released model: per value and per row (a table: score.c).
 *
 * unlearn_predict and unlearn_predict_class read the model once per query
 * (cached in fn_extra), so scoring a table with them costs one catalog read
 * plus O(p K) per row; unlearn_score_row reads a whole row with one
 * deform.  None needs the model's secret state.  The model is read as
 * the extension, and only for its owner and the roles granted 'read'
 * (check_model_read): predictions before and after a deletion reveal the
 * deleted row as well as the weights do.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(unlearn_predict);
PG_FUNCTION_INFO_V1(unlearn_predict_class);
PG_FUNCTION_INFO_V1(unlearn_coef);
PG_FUNCTION_INFO_V1(unlearn_predict_proba);
PG_FUNCTION_INFO_V1(unlearn_score_row);

PredictModel *
load_predict_model(const char *name, MemoryContext cxt)
{
	UnlearnModel *m;
	PredictModel *pm;
	MemoryContext old;
	int			i;
	ExtensionContext ctx;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = catalog_load_model(name, false, false, false);
	check_model_read(m->def.name, m->def.owner, ctx.caller, true);
	/*
	 * A fisher or Noisy-GD change publishes weights drawn afresh, whose
	 * bound counts when the change commits: read before commit and rolled
	 * back, each would be a sample counted nowhere
	 */
	if (m->def.mechanism != MECHANISM_NEWTON && !has_privs_of_role(ctx.caller, m->def.owner) &&
		catalog_model_written_here(m->def.name))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" changed in this transaction: its new weights are shown once it commits",
						m->def.name),
				 errdetail("Each change publishes weights with fresh noise, which its bound covers from its commit."),
				 errhint("Read the model after COMMIT, or as its owner.")));
	if (m->released.status != MODEL_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" releases no weights: its state is \"%s\"",
						m->def.name, model_status_name(m->released.status)),
				 m->released.status == MODEL_TOO_FEW_ROWS && m->released.nlabels == 1 ?
				 errhint("The rows of its table have a single label; inserting rows of another brings it back.") :
				 m->released.status == MODEL_TOO_FEW_ROWS ?
				 errhint("Its table has fewer rows than the model has weights; inserting rows or unlearn_retrain('%s') brings it back.", m->def.name) :
				 errhint("Its removal budget ran out; unlearn_retrain('%s') brings it back.", m->def.name)));
	if (m->def.deferred && !m->def.async_apply && catalog_has_queued_changes(m->def.name))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" releases no weights: row changes of its table are queued", m->def.name),
				 errdetail("Its weights still reflect rows that the queued changes remove or add."),
				 errhint("Apply them with unlearn_apply_pending('%s').", m->def.name)));
	old = MemoryContextSwitchTo(cxt);
	pm = palloc0(sizeof(PredictModel));
	pm->name = pstrdup(name);
	pm->loss = m->def.loss;
	pm->dims = m->def.dims;
	pm->p = m->def.p;
	pm->nclasses = m->released.nclasses;
	pm->nlabels = m->released.nlabels;
	model_row_map(m, &pm->map);
	if (m->def.centre != NULL)
	{
		double	   *centre = palloc(sizeof(double) * map_columns(m));
		double	   *spread = palloc(sizeof(double) * map_columns(m));

		memcpy(centre, m->def.centre, sizeof(double) * map_columns(m));
		memcpy(spread, m->def.spread, sizeof(double) * map_columns(m));
		pm->map.centre = centre;
		pm->map.spread = spread;
	}
	pm->coef = palloc(sizeof(double) * m->released.nclasses * m->def.p);
	memcpy(pm->coef, m->released.coef, sizeof(double) * m->released.nclasses * m->def.p);
	pm->classes = palloc(sizeof(char *) * Max(m->released.nlabels, 1));
	for (i = 0; i < m->released.nlabels; i++)
		pm->classes[i] = pstrdup(m->released.classes[i]);
	pm->row = palloc(sizeof(double) * (m->def.p + 1));
	pm->proba = palloc(sizeof(double) * Max(m->released.nlabels, 2));
	/* what decode_model_row and a scan read: the columns by name and type, the source */
	pm->columns = palloc0(sizeof(UnlearnModel));
	pm->columns->def.name = pm->name;
	pm->columns->def.source = m->def.source;
	pm->columns->def.label = pstrdup(m->def.label);
	pm->columns->def.nfeatures = m->def.nfeatures;
	pm->columns->def.features = palloc(sizeof(char *) * m->def.nfeatures);
	for (i = 0; i < m->def.nfeatures; i++)
		pm->columns->def.features[i] = pstrdup(m->def.features[i]);
	pm->columns->def.feature_array = m->def.feature_array;
	if (m->def.is_expression != NULL)
	{
		pm->columns->def.is_expression = palloc(sizeof(bool) * m->def.nfeatures);
		memcpy(pm->columns->def.is_expression, m->def.is_expression, sizeof(bool) * m->def.nfeatures);
	}
	pm->columns->def.column_types = palloc(sizeof(Oid) * (m->def.nfeatures + 1));
	memcpy(pm->columns->def.column_types, m->def.column_types, sizeof(Oid) * (m->def.nfeatures + 1));
	pm->columns->def.dims = m->def.dims;
	pm->columns->def.loss = m->def.loss;
	pm->columns->def.nulls = m->def.nulls;
	pm->columns->def.filter = m->def.filter != NULL ? pstrdup(m->def.filter) : NULL;
	MemoryContextSwitchTo(old);
	leave_extension_context(&ctx);
	SPI_finish();
	return pm;
}

static PredictModel *
cached_model(FunctionCallInfo fcinfo, text *name)
{
	PredictModel *pm = (PredictModel *) fcinfo->flinfo->fn_extra;
	char	   *s = text_to_cstring(name);

	if (pm == NULL || strcmp(pm->name, s) != 0)
	{
		pm = load_predict_model(s, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = pm;
	}
	pfree(s);
	return pm;
}

/*
 * Score the raw row in pm->row (mapping it in place): returns the
 * probability of the positive class (binary), the value (squared), or the
 * top one-vs-rest probability with its class in *best.
 */
double
score_row(PredictModel *pm, int *best)
{
	int			k;
	double		top = -INFINITY;

	map_row(&pm->map, pm->row);
	if (pm->nclasses == 1)
	{
		double		z = vec_dot(pm->coef, pm->row, pm->p);

		if (pm->loss == LOSS_SQUARED)
		{
			*best = -1;
			return z;
		}
		*best = z >= 0 ? 1 : 0;
		return logistic_sigmoid(z);
	}
	*best = 0;
	for (k = 0; k < pm->nclasses; k++)
	{
		double		z = vec_dot(pm->coef + (Size) k * pm->p, pm->row, pm->p);

		if (z > top)
		{
			top = z;
			*best = k;
		}
	}
	return logistic_sigmoid(top);
}

/*
 * The probability of every class of the raw row in pm->row (mapped in
 * place) into pm->proba, in the order of the model's classes: 1 - s and s
 * for a binary model, the one-vs-rest sigmoids normalised to sum 1
 * otherwise.  Returns the index of the most probable class.
 */
int
class_probabilities(PredictModel *pm)
{
	int			best;
	int			k;
	double		total = 0.0;
	double		top = 0.0;

	score_row(pm, &best);		/* maps pm->row */
	if (pm->nclasses == 1)
	{
		double		s = logistic_sigmoid(vec_dot(pm->coef, pm->row, pm->p));

		pm->proba[0] = 1.0 - s;
		pm->proba[1] = s;
		return best;
	}
	/*
	 * sigma(z_k) / sum_j sigma(z_j), in logs: log sigma(z_k) less its
	 * maximum, so that the sum is at least 1 even where every sigmoid
	 * underflows.
	 */
	for (k = 0; k < pm->nclasses; k++)
	{
		double		z = vec_dot(pm->coef + (Size) k * pm->p, pm->row, pm->p);

		pm->proba[k] = -loss_value(LOSS_LOGISTIC, z, 1.0);	/* log sigma(z) */
		top = k == 0 ? pm->proba[k] : Max(top, pm->proba[k]);
	}
	for (k = 0; k < pm->nclasses; k++)
	{
		pm->proba[k] = exp(pm->proba[k] - top);
		total += pm->proba[k];
	}
	for (k = 0; k < pm->nclasses; k++)
		pm->proba[k] /= total;
	return best;
}

/*
 * pm's columns, bound to the relation of argument argno (its model's
 * source if that is NULL), which *relid receives; with_label binds the
 * label column too.  Connects to SPI for the caller's scan, which finishes
 * it.
 */
UnlearnModel *
model_on_relation(PredictModel *pm, FunctionCallInfo fcinfo, int argno, bool with_label,
				  Oid *relid)
{
	UnlearnModel *m = pm->columns;

	*relid = PG_ARGISNULL(argno) ? m->def.source : PG_GETARG_OID(argno);
	if (get_rel_name(*relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", *relid)));
	/* no lock on a table the caller may not read at all, as for a SELECT */
	if (pg_class_aclcheck(*relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(*relid, GetUserId(), ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(*relid))));
	/* held to the transaction's end: the columns bound below stay as they are */
	LockRelationOid(*relid, AccessShareLock);
	if (get_rel_name(*relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", *relid)));
	if (*relid != m->def.source)
		bind_relation_columns(m, *relid, with_label);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return m;
}

/* a regression model has no classes */
void
require_classifier(PredictModel *pm, const char *function)
{
	if (pm->loss == LOSS_SQUARED)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a regression model", pm->name),
				 errhint("%s reads classes; use unlearn_predict() for its predicted value.", function)));
}

static void
read_input_vector(PredictModel *pm, ArrayType *x)
{
	Oid			elemtype = ARR_ELEMTYPE(x);

	if (elemtype != FLOAT8OID)
		elog(ERROR, "unlearn_predict: expected a float8[] argument");
	if (pm->map.impute)
	{
		/* a null or non-finite element is missing: the column's centre */
		extract_float_array_missing(PointerGetDatum(x), pm->row, pm->dims, "feature array");
		mark_missing_values(pm->row, pm->dims);
		return;
	}
	extract_float_array(PointerGetDatum(x), pm->row, pm->dims, "feature array");
	check_feature_values(pm->row, pm->dims, pm->name);
}

Datum
unlearn_predict(PG_FUNCTION_ARGS)
{
	PredictModel *pm = cached_model(fcinfo, PG_GETARG_TEXT_PP(0));
	int			best;

	read_input_vector(pm, PG_GETARG_ARRAYTYPE_P(1));
	PG_RETURN_FLOAT8(score_row(pm, &best));
}

Datum
unlearn_predict_class(PG_FUNCTION_ARGS)
{
	PredictModel *pm = cached_model(fcinfo, PG_GETARG_TEXT_PP(0));
	int			best;

	require_classifier(pm, "unlearn_predict_class()");
	read_input_vector(pm, PG_GETARG_ARRAYTYPE_P(1));
	score_row(pm, &best);
	PG_RETURN_TEXT_P(cstring_to_text(pm->classes[best]));
}

Datum
unlearn_predict_proba(PG_FUNCTION_ARGS)
{
	PredictModel *pm = cached_model(fcinfo, PG_GETARG_TEXT_PP(0));

	require_classifier(pm, "unlearn_predict_proba()");
	read_input_vector(pm, PG_GETARG_ARRAYTYPE_P(1));
	class_probabilities(pm);
	PG_RETURN_DATUM(float8_array(pm->proba, Max(pm->nlabels, 2)));
}

/* unlearn_score_row's state across calls: the model and the row type */
typedef struct RowScorer
{
	PredictModel *pm;
	Oid			rowtype;		/* the composite type bound last */
	int32		rowtypmod;
	uint64		desc_id;		/* and its descriptor's identifier */
	AttrNumber *attnums;		/* per feature, in that type */
	Datum	   *values;			/* one per attribute of the row type */
	bool	   *isnull;
	Datum	   *columns;		/* label slot (unused), then the features */
	bool	   *column_null;
	TupleDesc	desc;			/* of the row type bound */
	TupleDesc	result;
	FeatureEvaluator *expressions;	/* the feature expressions over it, or NULL */
	TupleTableSlot *slot;		/* holding the row they read */
} RowScorer;

/*
 * Bind the scorer to a row type: every feature column of the model must be
 * there, with a type of the same shape (scalar or array) that unlearn
 * reads in binary, and every column a feature expression reads, with the
 * type it has in the model's table.
 */
static void
bind_row_type(RowScorer *rs, Oid rowtype, int32 typmod, MemoryContext cxt)
{
	UnlearnModel *m = rs->pm->columns;
	TupleDesc	desc = lookup_rowtype_tupdesc(rowtype, typmod);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int			j,
				a;

	m->call.feature_base_types = NULL;
	if (rs->expressions != NULL)
	{
		feature_evaluator_free(rs->expressions);
		ExecDropSingleTupleTableSlot(rs->slot);
		rs->expressions = NULL;
		rs->slot = NULL;
	}
	/* unbound until the end: an error below leaves nothing half bound */
	rs->rowtype = InvalidOid;
	rs->desc = CreateTupleDescCopy(desc);
	rs->expressions = feature_evaluator_create(m, rs->desc, false);
	rs->attnums = palloc(sizeof(AttrNumber) * m->def.nfeatures);
	if (rs->expressions != NULL)
	{
		/* the row is deformed into the slot the expressions read */
		rs->slot = MakeSingleTupleTableSlot(rs->desc, &TTSOpsVirtual);
		rs->values = rs->slot->tts_values;
		rs->isnull = rs->slot->tts_isnull;
	}
	else
	{
		rs->values = palloc(sizeof(Datum) * Max(desc->natts, 1));
		rs->isnull = palloc(sizeof(bool) * Max(desc->natts, 1));
	}
	for (j = 0; j < m->def.nfeatures; j++)
	{
		Oid			t = InvalidOid;

		rs->attnums[j] = InvalidAttrNumber;
		if (feature_is_expression(m, j))
			continue;
		for (a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (!att->attisdropped && strcmp(NameStr(att->attname), m->def.features[j]) == 0)
			{
				rs->attnums[j] = a + 1;
				t = att->atttypid;
				break;
			}
		}
		if (rs->attnums[j] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("the row has no column \"%s\"", m->def.features[j]),
					 errhint("unlearn_score_row needs a row with every feature column of model \"%s\".",
							 m->def.name)));
		if (!feature_type_fits(m, t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of the row has type %s, which does not fit model \"%s\"",
							m->def.features[j], format_type_be(t), m->def.name)));
		m->def.column_types[j] = t;
	}
	rs->rowtype = rowtype;
	rs->rowtypmod = typmod;
	MemoryContextSwitchTo(old);
	ReleaseTupleDesc(desc);
}

/*
 * unlearn_score_row(model, row): the predicted label and score of a whole
 * row, deformed once.  NULL for a row with a null feature under nulls =>
 * 'skip'.  O(d + p K) per row after the first.
 */
Datum
unlearn_score_row(PG_FUNCTION_ARGS)
{
	RowScorer  *rs = (RowScorer *) fcinfo->flinfo->fn_extra;
	HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(1);
	Oid			rowtype = HeapTupleHeaderGetTypeId(rec);
	int32		typmod = HeapTupleHeaderGetTypMod(rec);
	HeapTupleData tuple;
	PredictModel *pm;
	UnlearnModel *m;
	Datum		result[2];
	bool		result_null[2] = {false, false};
	int			best;
	double		score;
	uint64		desc_id;
	int			j;

	if (rs == NULL || strcmp(rs->pm->name, text_to_cstring(PG_GETARG_TEXT_PP(0))) != 0)
	{
		MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
		MemoryContext old;
		TupleDesc	result_type;

		rs = MemoryContextAllocZero(cxt, sizeof(RowScorer));
		rs->pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), cxt);
		m = rs->pm->columns;
		rs->columns = MemoryContextAlloc(cxt, sizeof(Datum) * (m->def.nfeatures + 1));
		rs->column_null = MemoryContextAllocZero(cxt, sizeof(bool) * (m->def.nfeatures + 1));
		if (get_call_result_type(fcinfo, NULL, &result_type) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "unlearn_score_row must return a composite type");
		old = MemoryContextSwitchTo(cxt);
		rs->result = BlessTupleDesc(CreateTupleDescCopy(result_type));
		MemoryContextSwitchTo(old);
		fcinfo->flinfo->fn_extra = rs;
	}
	pm = rs->pm;
	m = pm->columns;
	/* a named row type keeps its oid when its table changes: compare the descriptor */
	desc_id = rowtype == RECORDOID ? (uint64) typmod :
		lookup_type_cache(rowtype, TYPECACHE_TUPDESC)->tupDesc_identifier;
	if (rs->rowtype != rowtype || rs->rowtypmod != typmod || rs->desc_id != desc_id)
	{
		bind_row_type(rs, rowtype, typmod, fcinfo->flinfo->fn_mcxt);
		rs->desc_id = desc_id;
	}

	tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = rec;
	if (rs->expressions != NULL)
		ExecClearTuple(rs->slot);
	heap_deform_tuple(&tuple, rs->desc, rs->values, rs->isnull);
	for (j = 0; j < m->def.nfeatures; j++)
		if (rs->attnums[j] != InvalidAttrNumber)
		{
			rs->columns[j + 1] = rs->values[rs->attnums[j] - 1];
			rs->column_null[j + 1] = rs->isnull[rs->attnums[j] - 1];
		}
	if (rs->expressions != NULL)
	{
		ExecStoreVirtualTuple(rs->slot);
		feature_evaluator_reset(rs->expressions);
		feature_evaluator_fill(rs->expressions, rs->slot, rs->columns, rs->column_null);
	}
	if (!decode_model_row(m, rs->columns, rs->column_null, pm->row, NULL, NULL))
		PG_RETURN_NULL();
	score = score_row(pm, &best);
	if (best >= 0)
		result[0] = CStringGetTextDatum(pm->classes[best]);
	else
		result_null[0] = true;
	result[1] = Float8GetDatum(score);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(rs->result, result, result_null)));
}

Datum
unlearn_coef(PG_FUNCTION_ARGS)
{
	PredictModel *pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)),
										  CurrentMemoryContext);

	PG_RETURN_DATUM(coef_array(pm->coef, pm->nclasses, pm->p));
}
