/*-------------------------------------------------------------------------
 *
 * train_pass.c
 *	  Training and re-anchoring by passes over the model's table.  Each
 *	  pass is one aggregate query: the statistics aggregates of
 *	  aggregates.c (their schema-unlearn twins unlearn._pass_hessian and
 *	  unlearn._pass_gram, same support functions and state, in a schema
 *	  no role but a superuser controls) over the row functions of
 *	  pass_rows.c, planned with
 *	  parallel query allowed, so Partial Aggregate runs in the workers and
 *	  no backend ever holds the rows.
 *
 * A training is
 *
 *	 census    rows per label and nulls per column (one GROUP BY pass):
 *			   the classes, the row count n, the rows outside the model
 *	 moments   ('standardize' only) each column's mean and variance
 *			   (column_moments.c), hence its centre and spread
 *	 Newton    one pass per iteration: every class still iterating gets
 *			   loss and gradient at its point, and the Hessian unless
 *			   newton.c expects no further Newton step (unlearn._pass_gradient)
 *	 Gram      (the guo bound only) K' = sum_i x_i x_i'
 *
 * and a re-anchoring is one Newton-like pass at the current weights.
 *
 * Invariants.  Every pass of one training or re-anchoring runs as the
 * table's owner (privilege.c) and under one registered snapshot, taken
 * after a command counter increment, so that all of them see the same
 * rows, those the calling statement left.  The rows a pass reads are
 * those the model reflects: a filter drops the rows with a null label,
 * under "nulls": "skip" those with a null in a model column, and those
 * whose label is none of declared classes, exactly as model_row_count
 * counts them.
 *
 * Stopping.  Training stops at a certified residual of TRAINING_FRACTION
 * (1/20) of the budget eps' (newton.c), and spent starts there.  Newton
 * converges quadratically, so the fraction decides at most one pass.  At
 * sigma = 1 (eps' = 0.314) the residuals by iteration were 1037, 183, 38,
 * 2.9, 0.014 on Fashion-MNIST T-shirt vs Shirt, which 1/20 stops one pass
 * early for 4.4% of the budget and 1/400 would not, and 3.8e4, 3.3e3, 89,
 * 0.080, 7e-8 on 1M x 50 synthetic rows, where neither saves a pass
 * (README, Benchmarks).
 *
 * Memory: O(K p^2) in the backend (the states, the factors) plus what the
 * executor uses: each worker's aggregate states, O(K p^2).  Cost per
 * pass: O(n (d + K p^2)) spread over the leader and its workers, whose
 * number the planner chooses from the table's size; the row functions
 * declare COST 100 (sql/unlearn.sql), so that it weighs their O(d) work.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <float.h>
#include <math.h>

#include <cblas.h>
#include <lapacke.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* the residual training stops at, as a fraction of the budget eps' */
#define TRAINING_FRACTION (1.0 / 20)

/* the query parameters every pass has */
#define PARAM_DECLARED 1		/* text[]: declared classes, or NULL */
#define PARAM_MODEL 2			/* text: the model's name */
#define PARAM_MAP 3				/* float8[]: the row map (row_map_array) */
#define PARAM_FIRST_CLASS 4		/* then per class: positive label, w */

typedef struct TrainingScan
{
	UnlearnModel *m;
	char	   *relation;
	char	   *filter;			/* "" or " WHERE ..." */
	char	   *raw_sql;		/* the row's raw features, a float8[] */
	Snapshot	snapshot;
	ExtensionContext ctx;
	Datum		map;
	int			passes;
	int64		rows;			/* rows the last pass read */
	bool		verbose;
	int			reports;		/* progress_begin's answer */
} TrainingScan;

/* distinct labels of a classifier's rows, with their row counts */
typedef struct LabelSet
{
	int			n;
	char	   *text[UNLEARN_MAX_CLASSES];
	double		value[UNLEARN_MAX_CLASSES];
	int64		rows[UNLEARN_MAX_CLASSES];
} LabelSet;

/*
 * The SQL of the row's raw features as one float8[]: unlearn._row_values
 * over at most FEATURES_PER_CALL features per call (a function takes at
 * most 100 arguments), each category() group one unlearn._category_values
 * call (model_category_groups), the calls joined by
 * array_cat(a, array_cat(b, c)).
 */
static char *
raw_features_sql(UnlearnModel *m)
{
	CategoryGroups *groups = model_category_groups(m);
	List	   *calls = NIL;
	StringInfoData call;
	int			run = 0;		/* features in the open _row_values call */
	char	   *sql;
	int			j;

	for (j = 0; j < m->def.nfeatures; j++)
	{
		if (groups->length[j] < 0)
			continue;
		if (run > 0 && (groups->length[j] > 0 || run == FEATURES_PER_CALL))
		{
			appendStringInfoChar(&call, ')');
			calls = lappend(calls, call.data);
			run = 0;
		}
		if (groups->length[j] > 0)
		{
			calls = lappend(calls, groups->sql[j]);
			continue;
		}
		if (run == 0)
		{
			initStringInfo(&call);
			appendStringInfoString(&call, "unlearn._row_values(");
		}
		else
			appendStringInfoString(&call, ", ");
		appendStringInfoString(&call, feature_sql(m, j));
		run++;
	}
	if (run > 0)
	{
		appendStringInfoChar(&call, ')');
		calls = lappend(calls, call.data);
	}
	sql = llast(calls);
	for (j = list_length(calls) - 2; j >= 0; j--)
		sql = psprintf("pg_catalog.array_cat(%s, %s)", (char *) list_nth(calls, j), sql);
	return sql;
}

/* the WHERE clause of a pass: the rows in the model (rows.c) */
static char *
scan_filter(UnlearnModel *m)
{
	StringInfoData filter;

	initStringInfo(&filter);
	if (m->def.nulls != NULLS_ERROR || m->def.classes_declared || m->def.loss == LOSS_SQUARED ||
		m->def.filter != NULL)
	{
		appendStringInfoString(&filter, " WHERE ");
		append_model_row_condition(m, &filter, PARAM_DECLARED, false);
	}
	return filter.data;
}

/*
 * Start the passes of one training or re-anchoring of m (command names it
 * in unlearn.progress, unless an outer command reports already): enter
 * the table owner's context and take the snapshot all passes share.
 */
static void
scan_begin(TrainingScan *scan, UnlearnModel *m, bool verbose, const char *command)
{
	memset(scan, 0, sizeof(*scan));
	scan->m = m;
	scan->verbose = verbose;
	scan->relation = relation_qualified_name(m->def.source);
	scan->raw_sql = raw_features_sql(m);

	scan->filter = scan_filter(m);
	scan->reports = progress_begin(command, m->def.name, m->def.owner, m->def.source);

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	scan->snapshot = RegisterSnapshot(GetActiveSnapshot());
	PopActiveSnapshot();
	enter_table_owner_context(m->def.source, &scan->ctx);
}

static void
scan_end(TrainingScan *scan)
{
	leave_extension_context(&scan->ctx);
	UnregisterSnapshot(scan->snapshot);
	progress_end(scan->reports);
}

/* the parameters every pass's query has: PARAM_DECLARED, PARAM_MODEL, PARAM_MAP */
static void
pass_parameters(TrainingScan *scan, Oid *types, Datum *values, char *nulls)
{
	UnlearnModel *m = scan->m;

	types[PARAM_DECLARED - 1] = TEXTARRAYOID;
	types[PARAM_MODEL - 1] = TEXTOID;
	types[PARAM_MAP - 1] = FLOAT8ARRAYOID;
	values[PARAM_DECLARED - 1] = m->def.classes_declared ?
		cstring_text_array(m->released.classes, m->released.nlabels) : (Datum) 0;
	nulls[PARAM_DECLARED - 1] = m->def.classes_declared ? ' ' : 'n';
	values[PARAM_MODEL - 1] = CStringGetTextDatum(m->def.name);
	nulls[PARAM_MODEL - 1] = ' ';
	values[PARAM_MAP - 1] = scan->map;
	nulls[PARAM_MAP - 1] = scan->map == (Datum) 0 ? 'n' : ' ';
}

/*
 * Run one pass, reported as phase whose rows call unlearn._row_x
 * calls_per_row times: query (with the common parameters, then extra ones
 * of extra_types) under the scan's snapshot, parallel query allowed.  The
 * result is left in SPI_tuptable.
 */
static void
run_pass(TrainingScan *scan, const char *phase, int calls_per_row, const char *query,
		 int nextra, Oid *extra_types, Datum *extra_values, char *extra_nulls)
{
	UnlearnModel *m = scan->m;
	int			nargs = PARAM_FIRST_CLASS - 1 + nextra;
	Oid		   *types = palloc(sizeof(Oid) * nargs);
	Datum	   *values = palloc(sizeof(Datum) * nargs);
	char	   *nulls = palloc(sizeof(char) * nargs);
	SPIPlanPtr	plan;
	TimestampTz start = GetCurrentTimestamp();
	bool		threads;
	int			ret;

	pass_parameters(scan, types, values, nulls);
	if (nextra > 0)
	{
		memcpy(types + PARAM_FIRST_CLASS - 1, extra_types, sizeof(Oid) * nextra);
		memcpy(values + PARAM_FIRST_CLASS - 1, extra_values, sizeof(Datum) * nextra);
		memcpy(nulls + PARAM_FIRST_CLASS - 1, extra_nulls, nextra);
	}
	progress_phase(phase, scan->passes + 1, calls_per_row, -1);
	plan = SPI_prepare_cursor(query, nargs, types, CURSOR_OPT_PARALLEL_OK);
	if (plan == NULL)
		elog(ERROR, "unlearn: could not plan a training pass of model \"%s\": %s",
			 m->def.name, SPI_result_code_string(SPI_result));
	threads = linalg_parallel(false);
	ret = SPI_execute_snapshot(plan, values, nulls, scan->snapshot, InvalidSnapshot,
							   true, false, 0);
	linalg_parallel(threads);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "unlearn: a training pass of model \"%s\" failed: %s",
			 m->def.name, SPI_result_code_string(ret));
	SPI_freeplan(plan);
	scan->passes++;
	if (scan->verbose)
	{
		long		secs;
		int			usecs;

		TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
		ereport(NOTICE,
				(errmsg("model \"%s\": pass %d (%s) over %s in %.3f s",
						m->def.name, scan->passes, phase, scan->relation, secs + usecs / 1e6)));
	}
	pfree(types);
	pfree(values);
	pfree(nulls);
}

/* add rows of a label to the set, merging labels of one canonical text */
static void
add_label(UnlearnModel *m, LabelSet *set, char *label, double value, int64 rows)
{
	int			k;

	for (k = 0; k < set->n; k++)
		if (strcmp(set->text[k], label) == 0)
		{
			set->rows[k] += rows;
			return;
		}
	if (set->n == UNLEARN_MAX_CLASSES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("label column \"%s\" has more than %d distinct values",
						m->def.label, UNLEARN_MAX_CLASSES),
				 errhint("Use loss => 'squared' for a numeric target.")));
	set->text[set->n] = label;
	set->value[set->n] = value;
	set->rows[set->n] = rows;
	set->n++;
}

static const LabelSet *sorting_labels;
static bool sorting_numeric;

/* the label type's own order: numbers by value, text bytewise */
static int
compare_labels(const void *a, const void *b)
{
	int			i = *(const int *) a,
				j = *(const int *) b;

	if (sorting_numeric)
	{
		double		x = sorting_labels->value[i],
					y = sorting_labels->value[j];

		/* a NaN label (of a float column) sorts last, as in float8 order */
		if (isnan(x) || isnan(y))
		{
			if (isnan(x) != isnan(y))
				return isnan(x) ? 1 : -1;
		}
		else if (x != y)
			return x < y ? -1 : 1;
	}
	return strcmp(sorting_labels->text[i], sorting_labels->text[j]);
}

/*
 * Pick the classes of a logistic model from the labels of its rows, in
 * the label type's order (the positive class of a binary model last), and
 * their row counts.  Returns false, with the labels there are in
 * m->released.classes, if the rows have fewer than two.  Declared classes
 * are the set whatever the rows have, but a first training still needs
 * rows of two of them.
 */
static bool
choose_classes(UnlearnModel *m, LabelSet *set)
{
	int		   *order = palloc(sizeof(int) * Max(set->n, 1));
	int			k;

	if (set->n < 2)
	{
		m->released.nlabels = set->n;
		m->released.classes = palloc(sizeof(char *) * 2);
		m->released.classes[0] = set->n > 0 ? set->text[0] : NULL;
		return false;
	}
	for (k = 0; k < set->n; k++)
		order[k] = k;
	sorting_labels = set;
	/* text labels have no value (NaN); numeric ones have, but NaN itself */
	sorting_numeric = false;
	for (k = 0; k < set->n; k++)
		sorting_numeric |= !isnan(set->value[k]);
	qsort(order, set->n, sizeof(int), compare_labels);
	m->released.nlabels = set->n;
	m->released.classes = palloc(sizeof(char *) * set->n);
	m->state.class_rows = palloc0(sizeof(int64) * set->n);
	for (k = 0; k < set->n; k++)
	{
		m->released.classes[k] = set->text[order[k]];
		m->state.class_rows[k] = set->rows[order[k]];
	}
	m->released.nclasses = set->n == 2 ? 1 : set->n;
	if (m->def.classes_declared && m->released.trained_rows == 0)
	{
		/* a first training on one label is a mistake, declared or not */
		int			present = 0;

		for (k = 0; k < set->n; k++)
			present += m->state.class_rows[k] > 0;
		if (present < 2)
			return false;
	}
	/*
	 * numeric {-1, 1} and {0, 1} put the positive class 1 last already; said
	 * once, when the model is trained
	 */
	if (m->released.nclasses == 1 && m->released.trained_rows == 0 &&
		(!sorting_numeric ||
		 !(set->value[order[1]] == 1.0 &&
		   (set->value[order[0]] == 0.0 || set->value[order[0]] == -1.0))))
		ereport(NOTICE,
				(errmsg("binary labels %s and %s: the positive class is %s",
						m->released.classes[0], m->released.classes[1], m->released.classes[1])));
	pfree(order);
	return true;
}

/*
 * The census pass: one GROUP BY over the whole table.  Sets *rows (rows in
 * the model), m->released.skipped, and for an array model without a width
 * yet, m->def.dims.  With discover (a classifier), the labels and their
 * counts; declared classes are in the set with no row.  Nulls in model
 * columns are errors under "nulls": "error", naming the column.
 */
static void
census(TrainingScan *scan, LabelSet *labels, int64 *rows)
{
	UnlearnModel *m = scan->m;
	bool		logistic = m->def.loss == LOSS_LOGISTIC;
	Oid			label_base = getBaseType(m->def.column_types[m->def.nfeatures]);
	bool		text_label = label_base == TEXTOID || label_base == VARCHAROID ||
		label_base == BPCHAROID;
	const char *label = quote_identifier(m->def.label);
	char	   *any_null = model_null_condition(m, false);
	char	   *missing = model_missing_condition(m, false);
	char	   *finite = model_finite_condition(m);
	char	   *width_rows = m->def.nulls == NULLS_IMPUTE ?
		psprintf("%s IS NOT NULL", feature_sql(m, 0)) : psprintf("NOT (%s)", any_null);
	const char *key_sql = label;
	StringInfoData q;
	int64		total = 0,
				kept = 0,
				skipped = 0,
				nonfinite = 0;
	int			min_width = -1,
				max_width = -1;
	bool		null_labels = false,
				null_elements = false;
	char	   *unknown_label = NULL;
	double		unknown_value = NAN;
	int			first_null_feature = m->def.nfeatures;
	uint64		g;
	int			j,
				col;

	initStringInfo(&q);
	if (!logistic)
		key_sql = psprintf("CASE WHEN %s IS NULL THEN 1 WHEN %s THEN 0 ELSE 2 END",
						   label, squared_label_condition(m));
	else if (text_label)
		key_sql = psprintf("(%s)::pg_catalog.text COLLATE \"C\"", label);
	if (m->def.feature_array && catalog_has_lean_passes() && m->def.nulls != NULLS_IMPUTE)
	{
		/*
		 * s = unlearn._array_shape(x), once per row (OFFSET 0 keeps the
		 * subquery's column from being expanded into each aggregate): null
		 * for a null array, -1 with a null element, else its length; the
		 * widths are those of the rows with neither, empty arrays (0) left
		 * out as array_length leaves them out
		 */
		/* f: under "nulls": "skip", whether the elements are finite */
		appendStringInfoString(&q, "SELECT key, pg_catalog.count(*),"
							   " pg_catalog.count(*) FILTER (WHERE s IS NULL OR s OPERATOR(pg_catalog.<) 0)");
		if (m->def.nulls == NULLS_ERROR)
			appendStringInfoString(&q, ", pg_catalog.count(*) FILTER (WHERE s IS NULL),"
								   " pg_catalog.count(*) FILTER (WHERE s OPERATOR(pg_catalog.<) 0)");
		appendStringInfo(&q, ", pg_catalog.min(s) FILTER (WHERE s OPERATOR(pg_catalog.>) 0 AND f),"
						 " pg_catalog.max(s) FILTER (WHERE s OPERATOR(pg_catalog.>) 0 AND f),"
						 " pg_catalog.count(*) FILTER (WHERE s OPERATOR(pg_catalog.>=) 0 AND NOT f)"
						 " FROM (SELECT %s AS key, unlearn._array_shape(%s) AS s, %s AS f FROM %s OFFSET 0) AS r"
						 " GROUP BY 1", key_sql, feature_sql(m, 0), finite ? finite : "true",
						 model_rows_of(m, scan->relation));
	}
	else
	{
		appendStringInfo(&q, "SELECT %s, pg_catalog.count(*)", key_sql);
		appendStringInfo(&q, ", pg_catalog.count(*) FILTER (WHERE %s)", missing);
		for (j = 0; j < m->def.nfeatures && m->def.nulls == NULLS_ERROR; j++)
			appendStringInfo(&q, ", pg_catalog.count(*) FILTER (WHERE %s IS NULL)", feature_sql(m, j));
		if (m->def.feature_array && m->def.nulls == NULLS_ERROR)
			appendStringInfo(&q, ", pg_catalog.count(*) FILTER (WHERE %s)", model_null_element_condition(feature_sql(m, 0)));
		/*
		 * the widths of the arrays a pass reads, an empty one 0: under
		 * 'impute', every array that is not null
		 */
		if (m->def.feature_array)
			appendStringInfo(&q, ", pg_catalog.min(COALESCE(pg_catalog.array_length(%s, 1), 0)) FILTER (WHERE %s),"
							 " pg_catalog.max(COALESCE(pg_catalog.array_length(%s, 1), 0)) FILTER (WHERE %s)",
							 feature_sql(m, 0), width_rows, feature_sql(m, 0), width_rows);
		if (finite != NULL)
			appendStringInfo(&q, ", pg_catalog.count(*) FILTER (WHERE NOT (%s) AND NOT (%s))",
							 missing, finite);
		else
			appendStringInfoString(&q, ", 0::pg_catalog.int8");
		appendStringInfo(&q, " FROM %s GROUP BY 1", model_rows_of(m, scan->relation));
	}
	run_pass(scan, "census", 1, q.data, 0, NULL, NULL, NULL);

	for (g = 0; g < SPI_processed; g++)
	{
		HeapTuple	tup = SPI_tuptable->vals[g];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		key_null,
					isnull;
		Datum		key = SPI_getbinval(tup, desc, 1, &key_null);
		int64		count = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		/* the last column: rows with no null but a value that is not finite */
		int64		not_finite = DatumGetInt64(SPI_getbinval(tup, desc, desc->natts, &isnull));
		int64		with_null = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull)) + not_finite;
		bool		no_label = logistic ? key_null : DatumGetInt32(key) == 1;
		char	   *text = NULL;
		double		value = NAN;

		nonfinite += not_finite;
		col = 4;
		total += count;
		for (j = 0; j < m->def.nfeatures && m->def.nulls == NULLS_ERROR; j++, col++)
			if (DatumGetInt64(SPI_getbinval(tup, desc, col, &isnull)) > 0)
				first_null_feature = Min(first_null_feature, j);
		if (m->def.feature_array && m->def.nulls == NULLS_ERROR &&
			DatumGetInt64(SPI_getbinval(tup, desc, col++, &isnull)) > 0)
			null_elements = true;
		if (no_label)
		{
			null_labels = true;
			skipped += count;
			continue;
		}
		if (!logistic && DatumGetInt32(key) == 2)
		{
			/* labels beyond UNLEARN_MAX_LABEL: outside, whatever the null policy */
			skipped += count;
			continue;
		}
		if (m->def.nulls == NULLS_SKIP)
		{
			skipped += with_null;
			count -= with_null;
		}
		if (logistic)
		{
			text = label_from_datum(text_label ? TEXTOID : m->def.column_types[m->def.nfeatures],
									key, &value);
			if (!model_takes_label(m, text, value))
			{
				skipped += count;
				continue;
			}
			if (labels == NULL && count > 0 &&
				class_position(m->released.classes, m->released.nlabels, text) < 0)
			{
				unknown_label = text;
				unknown_value = value;
			}
		}
		if (m->def.feature_array && count > 0)
		{
			int			lo = DatumGetInt32(SPI_getbinval(tup, desc, col, &isnull));
			int			hi = DatumGetInt32(SPI_getbinval(tup, desc, col + 1, &isnull));

			if (!isnull)
			{
				min_width = min_width < 0 ? lo : Min(min_width, lo);
				max_width = Max(max_width, hi);
			}
			else if (m->def.nulls != NULLS_IMPUTE)
			{
				/* only empty arrays (lean census: none of the counted shape) */
				min_width = min_width < 0 ? 0 : Min(min_width, 0);
				max_width = Max(max_width, 0);
			}
			/* under 'impute', only null arrays: rows of missing values */
		}
		kept += count;
		if (labels != NULL && count > 0)
			add_label(m, labels, text, value, count);
	}
	SPI_freetuptable(SPI_tuptable);
	progress_pass_done(kept);
	/*
	 * no row of the model has a value that is not finite, and none can come
	 * while the training holds its lock: the passes need not test each row
	 */
	if (model_skips_nonfinite(m) && nonfinite == 0)
	{
		m->call.no_nonfinite_rows = true;
		scan->filter = scan_filter(m);
	}

	/* under "nulls": "error", the label first, then the columns in order */
	if (m->def.nulls == NULLS_ERROR && null_labels)
		model_null_label_error(m);
	if (m->def.nulls == NULLS_ERROR && first_null_feature < m->def.nfeatures)
		model_null_feature_error(m, first_null_feature);
	if (m->def.nulls == NULLS_ERROR && null_elements)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("feature array must not contain nulls"),
				 errhint("Replace missing values before training or predicting.")));
	if (unknown_label != NULL)
		label_to_target(m, unknown_label, unknown_value, &unknown_value);	/* an error */
	if (total == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("table %s has no rows to train model \"%s\" on", scan->relation, m->def.name),
				 errhint("Insert rows before training.")));
	if (m->def.feature_array && kept > 0)
	{
		if (m->def.dims <= 0)
		{
			if (min_width < 1 || min_width > UNLEARN_MAX_DIMS)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_EXCEPTION),
						 errmsg("feature array of model \"%s\" must have 1 to %d elements",
								m->def.name, UNLEARN_MAX_DIMS)));
			m->def.dims = min_width;
		}
		/* under 'impute', rows whose arrays are all null have no width */
		if ((min_width >= 0 || m->def.nulls != NULLS_IMPUTE) &&
			(min_width != m->def.dims || max_width != m->def.dims))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("expected %d features, not %d", m->def.dims,
							min_width != m->def.dims ? min_width : max_width),
					 errhint("Every row must have as many features as the model was trained with.")));
	}
	m->released.skipped = skipped;
	*rows = kept;
}

/* the declared classes, with no rows yet, as the first labels of a set */
static LabelSet *
declared_label_set(UnlearnModel *m)
{
	LabelSet   *set = palloc0(sizeof(LabelSet));

	for (; m->def.classes_declared && set->n < m->released.nlabels; set->n++)
	{
		set->text[set->n] = m->released.classes[set->n];
		(void) label_from_text(m->def.column_types[m->def.nfeatures], m->released.classes[set->n],
							   &set->value[set->n]);
	}
	return set;
}

/* the moments pass: centre and spread of every column ('standardize') */
static void
fit_column_map(TrainingScan *scan)
{
	UnlearnModel *m = scan->m;
	int			columns = map_columns(m);
	char	   *query;
	ArrayType  *a;
	Datum		d;
	bool		isnull;
	const double *v;

	/* under 'impute', a missing value (NaN) is left out of its column */
	query = psprintf("SELECT unlearn._column_moments(unlearn.%s($%d, %s), %d) FROM %s%s",
					 m->def.nulls == NULLS_IMPUTE ? "_row_raw" : "_row_x",
					 PARAM_MODEL, m->def.nulls == NULLS_IMPUTE ? scan->raw_sql :
					 psprintf("NULL, %s", scan->raw_sql), columns, scan->relation, scan->filter);
	run_pass(scan, "column moments", 1, query, 0, NULL, NULL, NULL);
	if (SPI_processed != 1)
		elog(ERROR, "unlearn: the moments pass of model \"%s\" returned no row", m->def.name);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull && m->def.nulls == NULLS_IMPUTE)
	{
		/* every row's array is null: no column has a value */
		v = palloc0(sizeof(double) * 3 * columns);
	}
	else
	{
		a = isnull ? NULL : DatumGetArrayTypeP(d);
		if (a == NULL || ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] != 3 * columns)
			elog(ERROR, "unlearn: the moments pass of model \"%s\" returned no moments", m->def.name);
		v = (const double *) ARR_DATA_PTR(a);
	}
	column_map_fit_moments(m, v, v + columns, v + 2 * columns);
	progress_pass_done(m->released.rows);
	SPI_freetuptable(SPI_tuptable);
}

/* the SQL of one class's state in a pass: aggregate over x, y and w */
static void
append_class_state(TrainingScan *scan, StringInfo q, const char *aggregate, int k, int param)
{
	UnlearnModel *m = scan->m;

	appendStringInfo(q, "%sunlearn.%s(unlearn._row_x($%d, $%d, %s), unlearn._row_target($%d, %s, $%d), $%d, '%s')",
					 k > 0 ? ", " : "", aggregate,
					 PARAM_MODEL, PARAM_MAP, scan->raw_sql,
					 PARAM_MODEL, quote_identifier(m->def.label), param, param + 1,
					 m->def.loss == LOSS_SQUARED ? "squared" : "logistic");
}

/* the label a class's target is +1 for: NULL for squared loss */
static const char *
positive_label(UnlearnModel *m, int k)
{
	if (m->def.loss == LOSS_SQUARED)
		return NULL;
	return m->released.nclasses > 1 ? m->released.classes[k] : m->released.classes[1];
}

/*
 * The pass oracle of newton.c: loss and gradient sums of the given classes
 * at the given points, with the Hessian sums where asked (all of them on
 * a catalog without unlearn._pass_gradient), in one pass.
 */
static void
newton_pass(void *arg, int count, const int *classes, const double *const *points,
			const bool *hessian, PassTerms *terms)
{
	TrainingScan *scan = (TrainingScan *) arg;
	UnlearnModel *m = scan->m;
	int			p = m->def.p;
	Oid		   *types = palloc(sizeof(Oid) * 2 * count);
	Datum	   *values = palloc(sizeof(Datum) * 2 * count);
	char	   *nulls = palloc(sizeof(char) * 2 * count);
	bool	   *take = palloc(sizeof(bool) * count);
	bool		gradient_pass = catalog_has_lean_passes();
	bool		any_hessian = false;
	StringInfoData q;
	int			i;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	for (i = 0; i < count; i++)
	{
		const char *positive = positive_label(m, classes[i]);

		take[i] = hessian[i] || !gradient_pass;
		any_hessian |= take[i];
		append_class_state(scan, &q, take[i] ? "_pass_hessian" : "_pass_gradient", i,
						   PARAM_FIRST_CLASS + 2 * i);
		types[2 * i] = TEXTOID;
		values[2 * i] = positive ? CStringGetTextDatum(positive) : (Datum) 0;
		nulls[2 * i] = positive ? ' ' : 'n';
		types[2 * i + 1] = FLOAT8ARRAYOID;
		values[2 * i + 1] = float8_array(points[i], p);
		nulls[2 * i + 1] = ' ';
	}
	appendStringInfo(&q, " FROM %s%s", scan->relation, scan->filter);
	run_pass(scan, any_hessian ? "gradient and Hessian" : "gradient", count, q.data,
			 2 * count, types, values, nulls);
	if (SPI_processed != 1)
		elog(ERROR, "unlearn: a training pass of model \"%s\" returned no row", m->def.name);
	for (i = 0; i < count; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1, &isnull);
		StatsView	view;

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("model \"%s\" has no rows left to train on", m->def.name)));
		stats_view(d, &view);
		if (view.hessian != take[i] || view.p != p || view.w == NULL ||
			memcmp(view.w, points[i], sizeof(double) * p) != 0)
			elog(ERROR, "unlearn: a training pass of model \"%s\" returned another state", m->def.name);
		terms[i].rows = view.rows;
		terms[i].loss_sum = view.loss_sum;
		memcpy(terms[i].gradient, view.gradient, sizeof(double) * p);
		if (take[i])
			memcpy(terms[i].hessian, view.matrix, sizeof(double) * PACKED_SIZE(p));
	}
	scan->rows = terms[0].rows;
	progress_pass_done(scan->rows);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Passes of gradient sums over m's rows as they are now, for Noisy-GD
 * steps that do not hold the rows (noisy_gd_run.c): one snapshot for all
 * of them, in the table owner's context, as a training's passes.
 */
void *
gradient_passes_begin(UnlearnModel *m, const char *command)
{
	TrainingScan *scan = palloc(sizeof(TrainingScan));

	scan_begin(scan, m, false, command);
	scan->map = row_map_array(m);
	return scan;
}

/* GradientOracle: the sum of l'_i x_i at w over the rows, one pass */
void
gradient_pass(void *arg, const double *w, double *gradient_sum)
{
	int			cls = 0;
	bool		hessian = false;
	const double *points[1] = {w};
	PassTerms	terms;

	memset(&terms, 0, sizeof(terms));
	terms.gradient = gradient_sum;
	newton_pass(arg, 1, &cls, points, &hessian, &terms);
}

/* the rows the last pass read */
int64
gradient_pass_rows(void *arg)
{
	return ((TrainingScan *) arg)->rows;
}

void
gradient_passes_end(void *arg)
{
	scan_end((TrainingScan *) arg);
}

/* the Gram pass: K' = sum_i x_i x_i', packed, for the guo bound */
static void
gram_pass(TrainingScan *scan, double *gram)
{
	UnlearnModel *m = scan->m;
	bool		isnull;
	StatsView	view;
	Datum		d;

	run_pass(scan, "Gram matrix", 1, psprintf("SELECT unlearn._pass_gram(unlearn._row_x($%d, $%d, %s)) FROM %s%s",
							PARAM_MODEL, PARAM_MAP, scan->raw_sql,
							scan->relation, scan->filter),
			 0, NULL, NULL, NULL);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "unlearn: the Gram pass of model \"%s\" read no row", m->def.name);
	stats_view(d, &view);
	if (view.p != m->def.p || view.matrix == NULL)
		elog(ERROR, "unlearn: the Gram pass of model \"%s\" returned another state", m->def.name);
	memcpy(gram, view.matrix, sizeof(double) * PACKED_SIZE(m->def.p));
	progress_pass_done(view.rows);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * The labels of the rows of a classifier that releases no weights, in
 * the label type's order, into m->released.classes (none for an empty
 * table): so that the public class list of a resting or suspended model
 * names no label of deleted rows only.  Nothing else of m changes.  One
 * pass.
 */
void
classes_from_rows(UnlearnModel *m)
{
	m->released.classes = NULL;
	m->released.nlabels = 0;
	if (relation_row_count(m->def.source) > 0)
	{
		TrainingScan scan;
		LabelSet   *set = declared_label_set(m);
		int64		rows;
		int64		skipped = m->released.skipped;

		scan_begin(&scan, m, false, "class census");
		census(&scan, set, &rows);
		scan_end(&scan);
		m->released.skipped = skipped;
		(void) choose_classes(m, set);
	}
	if (m->released.classes == NULL)
		no_classes(m);
	m->released.nclasses = m->released.nlabels > 2 ? m->released.nlabels : 1;
	m->state.class_rows = NULL;		/* nothing is kept at rest */
}

/* an empty class list (not none) for a classifier that releases nothing */
void
no_classes(UnlearnModel *m)
{
	m->released.classes = palloc0(sizeof(char *));
	m->released.nlabels = 0;
	m->released.nclasses = 1;
	m->state.class_rows = NULL;
}

/*
 * (Re)train every class of m on the current rows of its source table.
 * On return m holds the new coefficients and state; the caller writes
 * them.  fresh_noise draws a new b (Algorithm 2 always does; a new model
 * too).  Returns false, changing nothing but the class list and counts,
 * if a classifier whose classes are taken afresh finds fewer than two
 * labels, or a first training on declared classes has rows of fewer than
 * two of them.
 */
bool
retrain_model(UnlearnModel *m, bool verbose, bool fresh_noise)
{
	TrainingScan scan;
	NewtonProblem np;
	bool		discover = ((m->released.classes == NULL || m->def.classes_declared) && m->def.loss == LOSS_LOGISTIC);
	LabelSet   *labels = discover ? declared_label_set(m) : NULL;
	int64		n;
	int			p;
	Size		packed;

	if (m->def.ntaken > 0 && !m->call.categories_taken && !take_categories(m))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a column whose categories model \"%s\" takes from its rows has too many values, or too long a one",
						m->def.name),
				 errdetail("A taken column may have at most 1000 values of at most 200 bytes each, and a model at most %d features.",
						   UNLEARN_MAX_DIMS),
				 errhint("Declare the categories: category(column, '{a,b,...}').")));
	scan_begin(&scan, m, verbose, "retraining");
	census(&scan, labels, &n);
	if (n == 0 && m->def.classes_declared)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("no row of table %s has a label among the declared classes of model \"%s\"",
						scan.relation, m->def.name),
				 errhint("Declare the labels the rows have, or leave classes out to take them from the rows.")));
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("every row of table %s has a null in a column of model \"%s\"",
						scan.relation, m->def.name),
				 errhint("Fill in the model's columns of some rows before training.")));
	if (labels != NULL && !choose_classes(m, labels))
	{
		scan_end(&scan);
		return false;
	}
	if (!m->def.feature_array)
		m->def.dims = m->def.nfeatures;
	m->def.p = p = m->def.dims + (m->def.intercept ? 1 : 0);
	if (p > n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has more features (%d) than rows (%lld)",
						m->def.name, p, (long long) n),
				 errhint("Add rows, or train on fewer features.")));
	m->def.scale = row_map_divisor(p, m->def.loss);
	m->def.reg = m->def.lambda * n;
	m->released.rows = n;
	m->released.trained_rows = n;
	if (m->def.mechanism == MECHANISM_NOISY_GD)
	{
		scan_end(&scan);
		linalg_parallel(true);
		noisy_gd_train(m, verbose);
		linalg_parallel(false);
		return true;
	}
	packed = PACKED_SIZE(p);
	if (fresh_noise || m->state.noise == NULL)
	{
		m->state.noise = palloc(sizeof(double) * m->released.nclasses * p);
		draw_objective_noise(m);
	}
	m->def.budget = objective_budget(m);
	m->released.coef = palloc0(sizeof(double) * m->released.nclasses * p);
	m->state.anchor = palloc(sizeof(double) * m->released.nclasses * p);
	m->state.factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * packed * m->released.nclasses);
	m->state.gram = MODEL_HAS_GRAM(m) ? MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * packed) : NULL;
	m->state.class_spent = palloc(sizeof(double) * m->released.nclasses);
	m->state.weight_sum = palloc(sizeof(double) * m->released.nclasses);
	linalg_parallel(true);
	if (!catalog_has_training_passes())
	{
		scan_end(&scan);
		train_loaded(m, verbose);
		linalg_parallel(false);
		m->state.gram_bound = MODEL_HAS_GRAM(m) ? packed_max_eigenvalue_bound(m->state.gram, p) : 0.0;
		m->released.spent = combine_class_spent(m->state.class_spent, m->released.nclasses);
		return true;
	}
	if (m->def.preprocess == PREPROCESS_STANDARDIZE)
		fit_column_map(&scan);
	scan.map = row_map_array(m);

	memset(&np, 0, sizeof(np));
	np.model = m->def.name;
	np.class_names = m->released.classes;
	np.p = p;
	np.nclasses = m->released.nclasses;
	np.loss = m->def.loss;
	np.reg = m->def.reg;
	np.noise = m->state.noise;
	np.target = TRAINING_FRACTION * m->def.budget;
	np.warning_level = MODEL_WARNING(m);
	np.verbose = verbose;
	np.evaluate = newton_pass;
	np.report = progress_iteration;
	np.arg = &scan;
	newton_fit(&np, m->released.coef, m->state.anchor, m->state.factor, m->state.weight_sum, m->state.class_spent);
	if (scan.rows != n)
		elog(ERROR, "unlearn: the passes of model \"%s\" read %lld rows, its census %lld",
			 m->def.name, (long long) scan.rows, (long long) n);
	if (MODEL_HAS_GRAM(m))
	{
		gram_pass(&scan, m->state.gram);
		m->state.gram_bound = packed_max_eigenvalue_bound(m->state.gram, p);
	}
	else
		m->state.gram_bound = 0.0;	/* unused */
	linalg_parallel(false);
	scan_end(&scan);
	m->released.spent = combine_class_spent(m->state.class_spent, m->released.nclasses);
	return true;
}

/*
 * The Hessian factors (packed, K of them), the weight-sum bounds and the
 * gradients of L_b at m->released.coef over the rows m reflects, in one
 * pass, and K' with the guo bound (a second pass): what a re-anchoring needs
 * (removal.c).  g receives K gradients, allowance their rounding
 * allowances, rows the rows read.  Returns false if some H is not
 * positive definite.
 */
bool
reanchor_passes(UnlearnModel *m, double *factor, double *weight_bound, double *g,
				double *allowance, int64 *rows)
{
	TrainingScan scan;
	int			p = m->def.p;
	int			K = m->released.nclasses;
	int		   *which;
	const double **points;
	bool	   *hessian;
	PassTerms  *terms;
	double	   *full;
	bool		ok = true;
	int			k;

	if (!catalog_has_training_passes())
		return reanchor_loaded(m, factor, weight_bound, g, allowance, rows);
	which = palloc(sizeof(int) * K);
	points = palloc(sizeof(double *) * K);
	hessian = palloc(sizeof(bool) * K);
	terms = palloc(sizeof(PassTerms) * K);
	full = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	for (k = 0; k < K; k++)
	{
		which[k] = k;
		points[k] = m->released.coef + (Size) k * p;
		hessian[k] = true;
		terms[k].gradient = g + (Size) k * p;
		terms[k].hessian = factor + PACKED_SIZE(p) * k;
	}
	scan_begin(&scan, m, false, "re-anchoring");
	scan.map = row_map_array(m);
	newton_pass(&scan, K, which, points, hessian, terms);
	for (k = 0; k < K && ok; k++)
	{
		const double *w = points[k];
		const double *b = m->state.noise + (Size) k * p;
		double	   *gk = g + (Size) k * p;

		ok = regularised_pass_terms(m->def.loss, m->def.reg, w, b, p, &terms[k], gk, &allowance[k],
									&weight_bound[k], full);
		if (ok)
			packed_from_full(full, p, factor + PACKED_SIZE(p) * k);
	}
	*rows = scan.rows;
	if (ok && MODEL_HAS_GRAM(m))
		gram_pass(&scan, m->state.gram);
	scan_end(&scan);
	pfree(full);
	return ok;
}

/*
 * The residual grad L_b(w_k) of every class at its current w over the
 * rows of the table, by one gradient pass (no Hessian): K gradients into
 * g and their rounding allowances into allowance.  O(n p K).
 */
void
residual_passes(UnlearnModel *m, double *g, double *allowance)
{
	TrainingScan scan;
	int			p = m->def.p;
	int			K = m->released.nclasses;
	int		   *which = palloc(sizeof(int) * K);
	const double **points = palloc(sizeof(double *) * K);
	bool	   *hessian = palloc0(sizeof(bool) * K);
	PassTerms  *terms = palloc(sizeof(PassTerms) * K);
	double	   *unused = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(double) * PACKED_SIZE(p) * K);
	double		weight_bound;
	int			k;

	if (!catalog_has_training_passes())
	{
		DesignMatrix dm;

		load_design(m, relation_qualified_name(m->def.source), &dm);
		map_design(m, &dm, false);
		for (k = 0; k < K; k++)
		{
			double		magnitude;

			design_gradient(m, &dm, k, m->released.coef + (Size) k * p,
							m->state.noise + (Size) k * p, g + (Size) k * p, &magnitude);
			allowance[k] = rounding_allowance(dm.n, p, magnitude);
		}
		free_design(&dm);
		return;
	}
	for (k = 0; k < K; k++)
	{
		which[k] = k;
		points[k] = m->released.coef + (Size) k * p;
		terms[k].gradient = g + (Size) k * p;
		terms[k].hessian = unused + PACKED_SIZE(p) * k;
	}
	scan_begin(&scan, m, false, "cohort erasure");
	scan.map = row_map_array(m);
	newton_pass(&scan, K, which, points, hessian, terms);
	for (k = 0; k < K; k++)
		regularised_pass_terms(m->def.loss, m->def.reg, points[k], m->state.noise + (Size) k * p, p,
							   &terms[k], g + (Size) k * p, &allowance[k], &weight_bound, NULL);
	scan_end(&scan);
	pfree(unused);
}

/* at most this many chord steps, one pass each, certify a change by measurement */
#define CHORD_PASSES 4

/*
 * Certify w by measurement (m must reflect exactly the table's rows):
 * one gradient pass gives each class's residual u_k = grad L_b(w_k) over
 * the rows; while some ||u_k|| plus its rounding allowance exceeds the
 * limit, a chord step w_k <- w_k - H^{-1} u_k with the factor at hand (a
 * cohort's H - H_c, or a re-anchoring's exact Hessian) and another pass,
 * at most CHORD_PASSES.  On success measured holds the residuals,
 * to be the spent budget, as after a re-anchoring; O(n p) a pass.
 */
bool
certify_by_measuring(UnlearnModel *m, double *measured)
{
	int			K = m->released.nclasses;
	int			p = m->def.p;
	double	   *g = palloc(sizeof(double) * K * p);
	double	   *allowance = palloc(sizeof(double) * K);
	int			pass,
				k;

	for (pass = 0; pass < CHORD_PASSES; pass++)
	{
		residual_passes(m, g, allowance);
		for (k = 0; k < K; k++)
			measured[k] = vec_norm(g + (Size) k * p, p) + allowance[k];
		if (message_level_is_interesting(DEBUG1) && caller_reads_figures(m))
			elog(DEBUG1, "unlearn: model \"%s\": measured residual %.6g after %d chord steps (limit %.6g)",
				 m->def.name, combine_class_spent(measured, K), pass, budget_limit(m));
		if (!budget_exceeded(m, measured))
			return true;
		for (k = 0; k < K; k++)
		{
			chol_solve_packed(m->state.factor + PACKED_SIZE(p) * k, p, g + (Size) k * p);
			cblas_daxpy(p, -1.0, g + (Size) k * p, 1, m->released.coef + (Size) k * p, 1);
		}
	}
	return false;
}

/*
 * How well m's released weights fit the rows it reflects, in one serial
 * pass read as training reads them (the table's owner, the rows the
 * passes' filter selects, mapped by unlearn._row_x): the share of rows
 * whose class it predicts (a classifier: the sign of the margin, or the
 * largest of one-vs-rest's), or R^2 (least squares: 1 - SSE / SST, 1 when
 * SST is 0).  NaN when the model releases nothing or reflects no row.
 * O(n p) time, O(p) memory: no row is kept.
 */
#define FIT_FETCH_ROWS 1000

/*
 * model_training_fit of a model of a Citus distributed table: the same
 * counts or sums, as aggregates that each shard computes on its worker
 * (unlearn._row_class, unlearn._row_margin), so no row travels to the
 * coordinator.  The sums are float8 sums, not long double.
 */
static double
distributed_training_fit(UnlearnModel *m)
{
	TrainingScan scan;
	Oid			types[2] = {FLOAT8ARRAYOID, TEXTARRAYOID};
	Datum		values[2];
	char		nulls[2] = "  ";
	char	   *x;
	char	   *target;
	bool		isnull;
	int64		n;
	double		fit;

	scan_begin(&scan, m, false, "measuring fit");
	scan.map = row_map_array(m);
	values[0] = coef_array(m->released.coef, m->released.nclasses, m->def.p);
	values[1] = cstring_text_array(m->released.classes, m->released.nlabels);
	x = psprintf("unlearn._row_x($%d, $%d, %s)", PARAM_MODEL, PARAM_MAP, scan.raw_sql);
	if (m->def.loss == LOSS_SQUARED)
	{
		target = psprintf("unlearn._row_target($%d, %s, NULL)", PARAM_MODEL,
						  quote_identifier(m->def.label));
		run_pass(&scan, "measuring fit", 1,
				 psprintf("SELECT pg_catalog.count(*), pg_catalog.sum(%s), pg_catalog.sum(%s * %s), "
						  "pg_catalog.sum((%s - unlearn._row_margin(%s, $%d)) ^ 2) FROM %s%s",
						  target, target, target, target, x, PARAM_FIRST_CLASS,
						  scan.relation, scan.filter),
				 2, types, values, nulls);
	}
	else
		run_pass(&scan, "measuring fit", 1,
				 psprintf("SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE "
						  "unlearn._row_target($%d, %s, ($%d)[unlearn._row_class(%s, $%d, %d)]) = 1) "
						  "FROM %s%s",
						  PARAM_MODEL, quote_identifier(m->def.label), PARAM_FIRST_CLASS + 1,
						  x, PARAM_FIRST_CLASS, m->released.nclasses, scan.relation, scan.filter),
				 2, types, values, nulls);
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (n == 0)
		fit = NAN;
	else if (m->def.loss == LOSS_SQUARED)
	{
		double		sy = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		double		syy = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
		double		sse = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
		double		sst = syy - sy * sy / n;

		fit = sst > 0 ? 1 - sse / sst : 1.0;
	}
	else
		fit = (double) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
												   &isnull)) / n;
	scan_end(&scan);
	return fit;
}

double
model_training_fit(UnlearnModel *m)
{
	TrainingScan scan;
	int			p = m->def.p;
	int			K = m->released.nclasses;
	Oid			label_type = m->def.column_types[m->def.nfeatures];
	Oid			types[PARAM_FIRST_CLASS - 1];
	Datum		values[PARAM_FIRST_CLASS - 1];
	char		nulls[PARAM_FIRST_CLASS - 1];
	SPIPlanPtr	plan;
	Portal		portal;
	int64		n = 0,
				correct = 0;
	long double sy = 0,
				syy = 0,
				sse = 0;

	if (m->released.status != MODEL_READY || m->released.coef == NULL)
		return NAN;
	if (citus_distribution(m->def.source) == 'h')
		return distributed_training_fit(m);
	scan_begin(&scan, m, false, "measuring fit");
	scan.map = row_map_array(m);
	pass_parameters(&scan, types, values, nulls);
	plan = SPI_prepare_cursor(psprintf("SELECT %s, unlearn._row_x($%d, $%d, %s) FROM %s%s",
									   quote_identifier(m->def.label), PARAM_MODEL, PARAM_MAP,
									   scan.raw_sql, scan.relation, scan.filter),
							  PARAM_FIRST_CLASS - 1, types, 0);
	if (plan == NULL)
		elog(ERROR, "unlearn: could not plan the fit of model \"%s\": %s",
			 m->def.name, SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, values, nulls, true);
	for (;;)
	{
		uint64		j;

		SPI_cursor_fetch(portal, true, FIT_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		if (SPI_tuptable->tupdesc->natts != 2 ||
			TupleDescAttr(SPI_tuptable->tupdesc, 0)->atttypid != label_type ||
			TupleDescAttr(SPI_tuptable->tupdesc, 1)->atttypid != FLOAT8ARRAYOID)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("a column of model \"%s\" changed type while its rows were being read",
							m->def.name),
					 errhint("Retry the statement.")));
		for (j = 0; j < SPI_processed; j++)
		{
			HeapTuple	tup = SPI_tuptable->vals[j];
			bool		label_null,
						x_null;
			Datum		label_datum = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &label_null);
			Datum		x_datum = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &x_null);
			ArrayType  *xa;
			const double *x;
			char	   *label;
			double		value;
			int			k,
						cls;

			CHECK_FOR_INTERRUPTS();
			if (label_null)
				continue;		/* outside the model, as in training */
			xa = x_null ? NULL : DatumGetArrayTypeP(x_datum);
			if (xa == NULL || ARR_NDIM(xa) != 1 || ARR_HASNULL(xa) || ARR_DIMS(xa)[0] != p)
				elog(ERROR, "unlearn: the fit of model \"%s\" read a row it cannot score", m->def.name);
			x = (const double *) ARR_DATA_PTR(xa);
			label = label_from_datum(label_type, label_datum, &value);
			if (!model_takes_label(m, label, value))
				continue;
			n++;
			if (m->def.loss == LOSS_SQUARED)
			{
				double		e = value - cblas_ddot(p, m->released.coef, 1, x, 1);

				sy += value;
				syy += (long double) value * value;
				sse += (long double) e * e;
				continue;
			}
			cls = class_position(m->released.classes, m->released.nlabels, label);
			if (K == 1)
				correct += (cblas_ddot(p, m->released.coef, 1, x, 1) > 0) == (cls == 1);
			else
			{
				int			best = 0;
				double		top = -INFINITY;

				for (k = 0; k < K; k++)
				{
					double		margin = cblas_ddot(p, m->released.coef + (Size) k * p, 1, x, 1);

					if (margin > top)
					{
						top = margin;
						best = k;
					}
				}
				correct += best == cls;
			}
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	scan_end(&scan);
	if (n == 0)
		return NAN;
	if (m->def.loss == LOSS_SQUARED)
	{
		long double sst = syy - sy * sy / n;

		return sst > 0 ? (double) (1 - sse / sst) : 1.0;
	}
	return (double) correct / n;
}

