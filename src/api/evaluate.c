/*-------------------------------------------------------------------------
 *
 * evaluate.c
 *	  unlearn_evaluate: a released model's metrics on the labelled rows of
 *	  a table, in one pass.
 *
 * The rows are read with the caller's rights (any role that may read the
 * table and unlearn.models may evaluate), decoded in binary like the
 * model's own (rows.c), and scored like unlearn_predict_proba and
 * unlearn_predict_class.  The metrics are metrics.c's.  O(n (d + p K))
 * for the pass, plus O(K n log n) for the ROC AUC.
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
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(unlearn_evaluate);

#define EVALUATE_COLUMNS 14
#define FETCH_ROWS 1000

/* what one pass collects: per row, the truth and the prediction */
typedef struct Collected
{
	int64		n;
	int64		capacity;
	int64		skipped;
	int		   *truth;			/* classifier: class indexes */
	int		   *predicted;
	double	   *proba;			/* n x K */
	double	   *y;				/* squared loss: targets */
	double	   *pred;			/* and predictions */
	MemoryContext cxt;			/* the caller's, which outlives SPI's */
} Collected;

static void
grow(Collected *c, int K)
{
	c->capacity = c->capacity == 0 ? 1024 : c->capacity * 2;
	if (c->truth == NULL)
	{
		c->truth = MemoryContextAllocHuge(c->cxt, sizeof(int) * c->capacity);
		c->predicted = MemoryContextAllocHuge(c->cxt, sizeof(int) * c->capacity);
		c->proba = MemoryContextAllocHuge(c->cxt, sizeof(double) * K * c->capacity);
		c->y = MemoryContextAllocHuge(c->cxt, sizeof(double) * c->capacity);
		c->pred = MemoryContextAllocHuge(c->cxt, sizeof(double) * c->capacity);
		return;
	}
	c->truth = repalloc_huge(c->truth, sizeof(int) * c->capacity);
	c->predicted = repalloc_huge(c->predicted, sizeof(int) * c->capacity);
	c->proba = repalloc_huge(c->proba, sizeof(double) * K * c->capacity);
	c->y = repalloc_huge(c->y, sizeof(double) * c->capacity);
	c->pred = repalloc_huge(c->pred, sizeof(double) * c->capacity);
}

/* the index of a row's label among the model's classes, or an error */
static int
true_class(PredictModel *pm, const char *label, Oid relid)
{
	int			k = class_position(pm->classes, pm->nlabels, label);

	if (k >= 0)
		return k;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("a row of relation \"%s\" has a label that is no class of model \"%s\"",
					get_rel_name(relid), pm->name),
			 errdetail("The model has %d classes; see unlearn.models.classes.", pm->nlabels),
			 errhint("Evaluate on rows whose labels are classes of the model.")));
	return -1;					/* keep compiler quiet */
}

/* one pass over the relation's rows, as the caller */
static void
collect(PredictModel *pm, UnlearnModel *m, Oid relid, Collected *c)
{
	int			K = Max(pm->nlabels, 2);
	Portal		portal;
	int			level = pin_expression_settings();

	/* names are resolved when the cursor is planned: feature expressions see built-ins only */
	/* on the model's own table, the rows of its filter */
	portal = SPI_cursor_open_with_args(NULL, build_feature_select(m, relid == m->def.source ?
																  model_rows_of(m, relation_qualified_name(relid)) :
																  relation_qualified_name(relid), NULL),
									   0, NULL, NULL, NULL, true, 0);
	unpin_expression_settings(level);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		check_feature_select_types(m, SPI_tuptable->tupdesc, true, NULL, 0);
		for (i = 0; i < SPI_processed; i++)
		{
			char	   *label;
			double		label_value;

			CHECK_FOR_INTERRUPTS();
			if (!decode_spi_row(m, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, pm->row,
								&label, &label_value))
			{
				c->skipped++;
				continue;
			}
			if (c->n == c->capacity)
				grow(c, K);
			if (pm->loss == LOSS_SQUARED)
			{
				int			best;

				if (!isfinite(label_value))
					ereport(ERROR,
							(errcode(ERRCODE_DATA_EXCEPTION),
							 errmsg("a label of relation \"%s\" is not a finite number", get_rel_name(relid)),
							 errhint("Evaluate model \"%s\" on rows with finite labels.", pm->name)));
				c->y[c->n] = label_value;
				c->pred[c->n] = score_row(pm, &best);
			}
			else
			{
				c->truth[c->n] = true_class(pm, label, relid);
				c->predicted[c->n] = class_probabilities(pm);
				memcpy(c->proba + (Size) c->n * K, pm->proba, sizeof(double) * K);
			}
			pfree(label);
			c->n++;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

static void
set_number(Datum *values, bool *nulls, int col, double v)
{
	nulls[col] = isnan(v);
	values[col] = Float8GetDatum(v);
}

/*
 * unlearn_evaluate(model, source): one row of metrics (see the SQL
 * comment); the columns that do not apply to the model's loss are NULL.
 */
Datum
unlearn_evaluate(PG_FUNCTION_ARGS)
{
	TupleDesc	result_desc;
	Datum		values[EVALUATE_COLUMNS];
	bool		nulls[EVALUATE_COLUMNS];
	PredictModel *pm;
	UnlearnModel *m;
	Collected	c;
	Oid			relid;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "unlearn_evaluate must return a composite type");
	pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);
	memset(&c, 0, sizeof(c));
	c.cxt = CurrentMemoryContext;	/* the rows' arrays outlive SPI_finish */
	m = model_on_relation(pm, fcinfo, 1, true, &relid);
	collect(pm, m, relid, &c);
	SPI_finish();

	memset(nulls, true, sizeof(nulls));
	values[0] = Int64GetDatum(c.n);
	values[1] = Int64GetDatum(c.skipped);
	nulls[0] = nulls[1] = false;
	if (pm->loss == LOSS_SQUARED)
	{
		RegressionMetrics r;

		regression_metrics(c.y, c.pred, c.n, &r);
		set_number(values, nulls, 11, r.r2);
		set_number(values, nulls, 12, r.rmse);
		set_number(values, nulls, 13, r.mae);
	}
	else if (c.n > 0)
	{
		ClassificationMetrics cm;
		int			K = Max(pm->nlabels, 2);
		Datum	   *classes = palloc(sizeof(Datum) * K);
		Datum	   *confusion = palloc(sizeof(Datum) * K * K);
		int			dims[2] = {K, K};
		int			lbs[2] = {1, 1};

		classification_metrics(c.truth, c.predicted, c.proba, c.n, K, &cm);
		set_number(values, nulls, 2, cm.accuracy);
		set_number(values, nulls, 3, cm.log_loss);
		set_number(values, nulls, 4, cm.roc_auc);
		set_number(values, nulls, 5, cm.macro_f1);
		for (i = 0; i < K; i++)
			classes[i] = CStringGetTextDatum(pm->classes[i]);
		for (i = 0; i < K * K; i++)
			confusion[i] = Int64GetDatum(cm.confusion[i]);
		values[6] = PointerGetDatum(construct_array(classes, K, TEXTOID, -1, false, TYPALIGN_INT));
		values[7] = float8_array(cm.precision, K);
		values[8] = float8_array(cm.recall, K);
		values[9] = float8_array(cm.f1, K);
		values[10] = PointerGetDatum(construct_md_array(confusion, NULL, 2, dims, lbs, INT8OID,
														sizeof(int64), FLOAT8PASSBYVAL,
														TYPALIGN_DOUBLE));
		for (i = 6; i <= 10; i++)
			nulls[i] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(result_desc), values, nulls)));
}
