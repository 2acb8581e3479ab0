/*-------------------------------------------------------------------------
 *
 * train.c
 *	  Algorithm 1: minimise L_b(w) = sum_i l(w.x_i, y_i) + (Lambda/2)||w||^2
 *	  + b.w by damped Newton, and keep the Hessian factor removal needs.
 *
 * Cost: reading the table O(n d); each Newton iteration O(n p^2) for the
 * Hessian (blocked DSYRK over 256-row slabs, so no second copy of X),
 * O(p^3 / 3) for its Cholesky factor and O(n p) for gradient and loss.
 * Memory: X (n p doubles) plus O(p^2 + 256 p).
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <float.h>
#include <math.h>

#include <cblas.h>
#include <lapacke.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define SLAB_ROWS 256
#define FETCH_ROWS 1000
#define MAX_NEWTON_ITERATIONS 60
#define GRADIENT_TOLERANCE 1e-10
#define STALL_TOLERANCE 1e-6

/*
 * Map a label (canonical text and value, rows.c) to its target.  Returns
 * the class index (binary: 1 for the positive class, 0 for the negative
 * one; one-vs-rest: k), or -1 for squared loss, where *y receives the
 * value.  Errors never echo the label.
 */
/* the index of a label in a class list, or -1 */
int
class_position(char *const *classes, int nlabels, const char *label)
{
	int			k;

	for (k = 0; k < nlabels; k++)
		if (strcmp(classes[k], label) == 0)
			return k;
	return -1;
}

int
label_to_target(UnlearnModel *m, const char *label, double value, double *y)
{
	int			k;

	if (m->loss == LOSS_SQUARED)
	{
		if (!isfinite(value))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("label of model \"%s\" must be a finite number", m->name),
					 errhint("Remove or fix rows whose label \"%s\" is NaN or infinite.", m->label)));
		*y = value;
		return -1;
	}
	k = class_position(m->classes, m->nlabels, label);
	if (k >= 0)
	{
		*y = m->nclasses > 1 ? 0.0 : (k == 1) ? 1.0 : -1.0;
		return k;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a row has a label that model \"%s\" was not trained on", m->name),
			 errdetail("The model was trained on %d labels; see unlearn.models.classes.", m->nlabels),
			 errhint("Retrain the model with unlearn_train(..., replace => true) to add a class.")));
	return -1;					/* keep compiler quiet */
}

double
design_target(UnlearnModel *m, const DesignMatrix *dm, int64 i, int k)
{
	if (dm->cls != NULL && m->nclasses > 1)
		return dm->cls[i] == k ? 1.0 : -1.0;
	return dm->y[i];
}

/* distinct labels met while loading a new logistic model's rows */
typedef struct LabelSet
{
	int			n;
	char	   *text[UNLEARN_MAX_CLASSES];
	double		value[UNLEARN_MAX_CLASSES];
} LabelSet;

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

static int
label_index(UnlearnModel *m, LabelSet *set, char *label, double value)
{
	int			k;

	for (k = 0; k < set->n; k++)
		if (strcmp(set->text[k], label) == 0)
			return k;
	if (set->n == UNLEARN_MAX_CLASSES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("label column \"%s\" has more than %d distinct values",
						m->label, UNLEARN_MAX_CLASSES),
				 errhint("Use loss => 'squared' for a numeric target.")));
	set->text[set->n] = pstrdup(label);
	set->value[set->n] = value;
	return set->n++;
}

/*
 * Pick the classes of a logistic model from the labels its rows have, in
 * the label type's order (the positive class of a binary model last), turn
 * the rows' provisional indexes into targets and count the rows of each
 * class.  Returns false, with the labels there are in m->classes, if the
 * rows have fewer than two.  Declared classes are the set whatever the
 * rows have, but a first training still needs rows of two of them.
 */
static bool
choose_classes(UnlearnModel *m, LabelSet *set, DesignMatrix *dm)
{
	int		   *order = palloc(sizeof(int) * Max(set->n, 1));
	int		   *rank = palloc(sizeof(int) * Max(set->n, 1));
	int			k;
	int64		i;

	if (set->n < 2)
	{
		m->nlabels = set->n;
		m->classes = palloc(sizeof(char *) * 2);
		m->classes[0] = set->n > 0 ? set->text[0] : NULL;
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
	m->nlabels = set->n;
	m->classes = palloc(sizeof(char *) * set->n);
	for (k = 0; k < set->n; k++)
	{
		m->classes[k] = set->text[order[k]];
		rank[order[k]] = k;
	}
	m->nclasses = set->n == 2 ? 1 : set->n;
	m->class_rows = palloc0(sizeof(int64) * set->n);
	for (i = 0; i < dm->n; i++)
	{
		dm->cls[i] = rank[dm->cls[i]];
		dm->y[i] = m->nclasses == 1 ? (dm->cls[i] == 1 ? 1.0 : -1.0) : 0.0;
		m->class_rows[dm->cls[i]]++;
	}
	if (m->classes_declared && m->trained_rows == 0)
	{
		/* a first training on one label is a mistake, declared or not */
		int			present = 0;

		for (k = 0; k < set->n; k++)
			present += m->class_rows[k] > 0;
		if (present < 2)
			return false;
	}
	if (m->nclasses == 1)
	{
		/*
		 * numeric {-1, 1} and {0, 1} put the positive class 1 last already;
		 * said once, when the model is trained
		 */
		if (m->trained_rows == 0 &&
			(!sorting_numeric ||
			 !(set->value[order[1]] == 1.0 &&
			   (set->value[order[0]] == 0.0 || set->value[order[0]] == -1.0))))
			ereport(NOTICE,
					(errmsg("binary labels %s and %s: the positive class is %s",
							m->classes[0], m->classes[1], m->classes[1])));
		pfree(dm->cls);
		dm->cls = NULL;
	}
	pfree(order);
	pfree(rank);
	return true;
}

/* the number of rows of a table, counted as its owner (privilege.c) */
int64
relation_row_count(Oid relid)
{
	char	   *relation = relation_qualified_name(relid);
	ExtensionContext ctx;
	bool		isnull;
	int64		count;

	enter_table_owner_context(relid, &ctx);
	if (SPI_execute(psprintf("SELECT pg_catalog.count(*) FROM %s", relation), false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the rows of %s", relation);
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	leave_extension_context(&ctx);
	return count;
}

/*
 * The number of rows a model reflects: those of its table, less (under
 * nulls => 'skip') the rows with a null in a model column, which
 * *skipped receives.  Counted as the table's owner.
 */
int64
model_row_count(UnlearnModel *m, int64 *skipped)
{
	char	   *relation = relation_qualified_name(m->source);
	StringInfoData cond;
	ExtensionContext ctx;
	bool		isnull;
	int64		total,
				kept;
	Oid			classes_type = TEXTARRAYOID;
	Datum		classes;
	int			j;

	*skipped = 0;
	if (!m->skip_nulls && !m->classes_declared)
		return relation_row_count(m->source);
	initStringInfo(&cond);
	appendStringInfo(&cond, "%s IS NOT NULL", quote_identifier(m->label));
	if (m->classes_declared)
		append_declared_label_condition(m, &cond, 1);
	for (j = 0; j < m->nfeatures && m->skip_nulls; j++)
	{
		const char *col = feature_sql(m, j);

		/* the table's arrays are one-dimensional: decode_model_row refuses others */
		if (m->feature_array)
			appendStringInfo(&cond, " AND %s IS NOT NULL AND pg_catalog.array_position(%s, NULL) IS NULL",
							 col, col);
		else
			appendStringInfo(&cond, " AND %s IS NOT NULL", col);
	}
	enter_table_owner_context(m->source, &ctx);
	classes = m->classes_declared ? cstring_text_array(m->classes, m->nlabels) : (Datum) 0;
	if (SPI_execute_with_args(psprintf("SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE %s) FROM %s",
									   cond.data, relation),
							  m->classes_declared ? 1 : 0, &classes_type, &classes, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the rows of %s", relation);
	total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	kept = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	leave_extension_context(&ctx);
	*skipped = total - kept;
	return kept;
}

/*
 * Read the model's rows from its table (relation: its qualified name), as
 * the table's owner, into a row-major matrix of raw features (unmapped;
 * see map_design).  Rows of a label that is none of declared classes
 * are outside the model, counted as skipped.  discover takes a
 * classifier's classes from the rows, or the declared ones with their
 * row counts: returns false if the rows have fewer than two labels (with
 * declared classes, at a first training only).
 */
bool
load_design(UnlearnModel *m, const char *relation, DesignMatrix *dm, bool discover)
{
	Portal		portal;
	int64		expected;
	int64		i = 0;
	int64		read = 0;
	double	   *raw = NULL;
	bool		isnull;
	LabelSet   *labels = NULL;
	ExtensionContext ctx;

	memset(dm, 0, sizeof(*dm));
	expected = relation_row_count(m->source);
	if (expected == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("table %s has no rows to train model \"%s\" on", relation, m->name),
				 errhint("Insert rows before training.")));

	if (discover && m->loss == LOSS_LOGISTIC)
	{
		labels = palloc0(sizeof(LabelSet));
		/* declared classes are the set from the start, rows or none */
		for (; m->classes_declared && labels->n < m->nlabels; labels->n++)
		{
			labels->text[labels->n] = m->classes[labels->n];
			(void) label_from_text(m->column_types[m->nfeatures], m->classes[labels->n],
								   &labels->value[labels->n]);
		}
	}

	/* planned and run as the table's owner (privilege.c) */
	enter_table_owner_context(m->source, &ctx);
	portal = SPI_cursor_open_with_args(NULL, build_feature_select(m, relation, NULL),
									   0, NULL, NULL, NULL, false, 0);
	for (;;)
	{
		uint64		j;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		check_feature_select_types(m, SPI_tuptable->tupdesc, true, NULL, 0);
		for (j = 0; j < SPI_processed && read < expected; j++)
		{
			HeapTuple	tup = SPI_tuptable->vals[j];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			char	   *label;
			double		label_value;
			double		y = 0;
			int			cls;

			CHECK_FOR_INTERRUPTS();
			/* a concurrent insert beyond count(): that is the snapshot we use */
			read++;
			if (dm->x == NULL)
			{
				/* first row in the model: learn d of an array model, then size X */
				if (m->feature_array && m->dims <= 0)
				{
					Datum		v = SPI_getbinval(tup, desc, 2, &isnull);

					if (m->skip_nulls && (isnull || spi_row_has_null(m, tup, desc)))
					{
						dm->skipped++;
						continue;
					}
					if (isnull)
						ereport(ERROR,
								(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
								 errmsg("feature column \"%s\" is null in a row of model \"%s\"",
										m->features[0], m->name),
								 errhint("Remove the row or fill in its features, or train with nulls => 'skip'.")));
					m->dims = extract_float_array(v, NULL, -1, "feature array");
					if (m->dims == 0 || m->dims > UNLEARN_MAX_DIMS)
						ereport(ERROR,
								(errcode(ERRCODE_DATA_EXCEPTION),
								 errmsg("feature array of model \"%s\" must have 1 to %d elements",
										m->name, UNLEARN_MAX_DIMS)));
				}
				m->p = m->dims + (m->intercept ? 1 : 0);
				dm->p = m->p;
				dm->x = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(double) * m->p * expected);
				dm->y = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * expected);
				if (m->nclasses > 1 || labels != NULL)
					dm->cls = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int) * expected);
			}
			raw = dm->x + i * m->p;
			if (!decode_spi_row(m, tup, desc, raw, &label, &label_value) ||
				!model_takes_label(m, label))
			{
				dm->skipped++;
				continue;
			}
			if (labels != NULL)
				cls = label_index(m, labels, label, label_value);
			else
				cls = label_to_target(m, label, label_value, &y);
			dm->y[i] = y;
			if (dm->cls)
				dm->cls[i] = cls;
			pfree(label);
			i++;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	leave_extension_context(&ctx);
	dm->n = i;
	if (labels != NULL)
		return choose_classes(m, labels, dm);
	return true;
}

/*
 * The labels of the rows of a classifier that releases no weights, in
 * the label type's order, into m->classes (none for an empty table): so
 * that the public class list of a resting or suspended model names no
 * label of deleted rows only.  Nothing else of m changes.  O(n d).
 */
void
classes_from_rows(UnlearnModel *m)
{
	DesignMatrix dm;

	m->classes = NULL;
	m->nlabels = 0;
	if (relation_row_count(m->source) > 0)
	{
		(void) load_design(m, relation_qualified_name(m->source), &dm, true);
		free_design(&dm);
	}
	if (m->classes == NULL)
		m->classes = palloc0(sizeof(char *));	/* an empty list, not none */
	m->nclasses = m->nlabels > 2 ? m->nlabels : 1;
	m->class_rows = NULL;		/* nothing is kept at rest */
}

/*
 * Map every row of dm (column_map.c).  fit (at a (re)training) first sets
 * the map's divisor and, for 'standardize', fits centre and spread to
 * these rows.
 */
void
map_design(UnlearnModel *m, DesignMatrix *dm, bool fit)
{
	RowMap		map;
	int64		i;

	if (fit)
	{
		m->scale = row_map_divisor(m->p);
		if (m->preprocess == PREPROCESS_STANDARDIZE)
			column_map_fit(m, dm->x, dm->n, m->p);
	}
	model_row_map(m, &map);
	for (i = 0; i < dm->n; i++)
		map_row(&map, dm->x + i * m->p);
}

/*
 * g = X' l'(Xw) + Lambda w + b (b may be NULL), and returns the loss L_b.
 * *magnitude receives sum |l'_i| + Lambda ||w|| + ||b||, the scale of the
 * rounding error of g.
 */
static double
objective(UnlearnModel *m, const DesignMatrix *dm, int k, const double *w,
		  const double *b, double *g, double *z, double *magnitude)
{
	int			p = m->p;
	double		lossv = 0.0;
	double		mag = 0.0;
	int64		i;

	cblas_dgemv(CblasRowMajor, CblasNoTrans, dm->n, p, 1.0, dm->x, p, w, 1, 0.0, z, 1);
	for (i = 0; i < dm->n; i++)
	{
		double		y = design_target(m, dm, i, k);
		double		zi = z[i];

		lossv += loss_value(m->loss, zi, y);
		z[i] = loss_d1(m->loss, zi, y);
		mag += fabs(z[i]);
	}
	if (g != NULL)
	{
		cblas_dgemv(CblasRowMajor, CblasTrans, dm->n, p, 1.0, dm->x, p, z, 1, 0.0, g, 1);
		cblas_daxpy(p, m->reg, w, 1, g, 1);
		if (b != NULL)
			cblas_daxpy(p, 1.0, b, 1, g, 1);
	}
	lossv += 0.5 * m->reg * cblas_ddot(p, w, 1, w, 1);
	if (b != NULL)
		lossv += cblas_ddot(p, b, 1, w, 1);
	if (magnitude)
		*magnitude = mag + m->reg * vec_norm(w, p) + (b ? vec_norm(b, p) : 0.0);
	return lossv;
}

/* g = grad L_b(w) on the design; returns L_b, *magnitude as objective() */
double
design_gradient(UnlearnModel *m, const DesignMatrix *dm, int k,
				const double *w, const double *b, double *g, double *magnitude)
{
	double	   *z = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(dm->n, 1));
	double		lossv = objective(m, dm, k, w, b, g, z, magnitude);

	pfree(z);
	return lossv;
}

void
free_design(DesignMatrix *dm)
{
	if (dm->x)
		pfree(dm->x);
	if (dm->y)
		pfree(dm->y);
	if (dm->cls)
		pfree(dm->cls);
	memset(dm, 0, sizeof(*dm));
}

/*
 * H = sum_i l''(w.x_i) x_i x_i' + Lambda I in the lower triangle of a
 * column-major p x p matrix (blocked DSYRK over slabs of scaled rows).
 * Returns the weight sum C = sum_i l''(w.x_i).
 */
static double
hessian_full(UnlearnModel *m, const DesignMatrix *dm, int k, const double *w,
			 const double *z_margin, double *h, double *slab)
{
	int			p = m->p;
	double		weight_sum = 0.0;
	int64		i0;
	int			j;

	memset(h, 0, sizeof(double) * p * p);
	if (m->loss == LOSS_SQUARED)
	{
		cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, dm->n, 2.0,
					dm->x, p, 0.0, h, p);
		weight_sum = 2.0 * dm->n;
	}
	else
		for (i0 = 0; i0 < dm->n; i0 += SLAB_ROWS)
		{
			int			rows = (int) Min(SLAB_ROWS, dm->n - i0);
			int			r;

			for (r = 0; r < rows; r++)
			{
				int64		i = i0 + r;
				double		c = loss_d2(m->loss, z_margin[i], design_target(m, dm, i, k));

				weight_sum += c;
				memcpy(slab + (Size) r * p, dm->x + i * p, sizeof(double) * p);
				cblas_dscal(p, sqrt(c), slab + (Size) r * p, 1);
			}
			cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, rows, 1.0,
						slab, p, 1.0, h, p);
			CHECK_FOR_INTERRUPTS();
		}
	for (j = 0; j < p; j++)
		h[(Size) j * p + j] += m->reg;
	return weight_sum;
}

/*
 * L-BFGS (Nocedal and Wright, Algorithm 7.4, memory LBFGS_MEMORY) from w
 * until ||g|| <= LBFGS_TOLERANCE * g0norm: O(n p) per iteration, so the
 * O(n p^2) Hessian is built only for the last Newton step(s).
 */
#define LBFGS_MEMORY 10
#define LBFGS_TOLERANCE 1e-7
#define LBFGS_MAX_ITERATIONS 500

static void
lbfgs_phase(UnlearnModel *m, const DesignMatrix *dm, int k, const double *b,
			double *w, double g0norm, double *z, bool verbose)
{
	int			p = m->p;
	double	   *s_hist = palloc(sizeof(double) * LBFGS_MEMORY * p);
	double	   *y_hist = palloc(sizeof(double) * LBFGS_MEMORY * p);
	double		rho[LBFGS_MEMORY];
	double		alpha[LBFGS_MEMORY];
	double	   *g = palloc(sizeof(double) * p);
	double	   *g_new = palloc(sizeof(double) * p);
	double	   *d = palloc(sizeof(double) * p);
	double	   *w_new = palloc(sizeof(double) * p);
	int			stored = 0,
				newest = -1,
				iter;
	double		f = objective(m, dm, k, w, b, g, z, NULL);

	for (iter = 0; iter < LBFGS_MAX_ITERATIONS; iter++)
	{
		double		gnorm = vec_norm(g, p);
		double		slope,
					t = 1.0,
					f_new;
		int			j,
					idx;

		CHECK_FOR_INTERRUPTS();
		if (verbose && iter % 10 == 0)
			ereport(NOTICE,
					(errmsg("%s%s%sL-BFGS iteration %d: loss %.10g, gradient norm %.3e",
							m->nclasses > 1 ? "class " : "",
							m->nclasses > 1 ? m->classes[k] : "",
							m->nclasses > 1 ? ", " : "", iter, f, gnorm)));
		if (gnorm <= LBFGS_TOLERANCE * g0norm)
			break;

		/* two-loop recursion: d = -H_k g */
		memcpy(d, g, sizeof(double) * p);
		for (j = 0; j < stored; j++)
		{
			idx = (newest - j + LBFGS_MEMORY) % LBFGS_MEMORY;
			alpha[idx] = rho[idx] * cblas_ddot(p, s_hist + (Size) idx * p, 1, d, 1);
			cblas_daxpy(p, -alpha[idx], y_hist + (Size) idx * p, 1, d, 1);
		}
		if (stored > 0)
		{
			const double *yn = y_hist + (Size) newest * p;

			cblas_dscal(p, cblas_ddot(p, s_hist + (Size) newest * p, 1, yn, 1) /
						cblas_ddot(p, yn, 1, yn, 1), d, 1);
		}
		else
			cblas_dscal(p, 1.0 / Max(gnorm, DBL_MIN), d, 1);
		for (j = stored - 1; j >= 0; j--)
		{
			double		beta;

			idx = (newest - j + LBFGS_MEMORY) % LBFGS_MEMORY;
			beta = rho[idx] * cblas_ddot(p, y_hist + (Size) idx * p, 1, d, 1);
			cblas_daxpy(p, alpha[idx] - beta, s_hist + (Size) idx * p, 1, d, 1);
		}
		cblas_dscal(p, -1.0, d, 1);
		slope = cblas_ddot(p, g, 1, d, 1);
		if (!(slope < 0))
		{
			/* not a descent direction: restart from steepest descent */
			stored = 0;
			memcpy(d, g, sizeof(double) * p);
			cblas_dscal(p, -1.0 / Max(gnorm, DBL_MIN), d, 1);
			slope = cblas_ddot(p, g, 1, d, 1);
		}

		/* backtracking (Armijo) line search */
		for (;;)
		{
			memcpy(w_new, w, sizeof(double) * p);
			cblas_daxpy(p, t, d, 1, w_new, 1);
			f_new = objective(m, dm, k, w_new, b, NULL, z, NULL);
			if (f_new <= f + 1e-4 * t * slope || t < 1e-12)
				break;
			t *= 0.5;
		}
		if (t < 1e-12 || f - f_new <= 1e-15 * fabs(f))
			break;				/* at the rounding floor: Newton takes over */
		objective(m, dm, k, w_new, b, g_new, z, NULL);

		/* s = w_new - w, y = g_new - g */
		idx = (newest + 1) % LBFGS_MEMORY;
		for (j = 0; j < p; j++)
		{
			s_hist[(Size) idx * p + j] = w_new[j] - w[j];
			y_hist[(Size) idx * p + j] = g_new[j] - g[j];
		}
		{
			double		sy = cblas_ddot(p, s_hist + (Size) idx * p, 1, y_hist + (Size) idx * p, 1);

			if (sy > 1e-12)
			{
				rho[idx] = 1.0 / sy;
				newest = idx;
				stored = Min(stored + 1, LBFGS_MEMORY);
			}
		}
		memcpy(w, w_new, sizeof(double) * p);
		memcpy(g, g_new, sizeof(double) * p);
		f = f_new;
	}
	pfree(s_hist);
	pfree(y_hist);
	pfree(g);
	pfree(g_new);
	pfree(d);
	pfree(w_new);
}

/*
 * Fit class k from w (in: start, out: solution): L-BFGS to a moderate
 * tolerance, then Newton steps, which converge quadratically.  Newton
 * stops as soon as the gradient meets the tolerance, so the last Hessian
 * built is usually at the point one step before the solution: that point
 * becomes the anchor w0 (written to anchor), its packed Cholesky factor is
 * left in factor and its weight sum C in weight_sum.  The stale-Hessian term of every removal bound
 * accounts for w != w0 (removal.c).  Returns the certified training
 * residual ||u_0|| (with a rounding margin): the first entry of the spent
 * budget (paper footnote 1).
 */
double
fit_class(UnlearnModel *m, const DesignMatrix *dm, int k, const double *b,
		  double *w, double *anchor, double *factor, double *weight_sum, bool verbose)
{
	int			p = m->p;
	double	   *g = palloc(sizeof(double) * p);
	double	   *step = palloc(sizeof(double) * p);
	double	   *trial = palloc(sizeof(double) * p);
	double	   *h = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	double	   *slab = palloc(sizeof(double) * SLAB_ROWS * p);
	double	   *z = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * dm->n);
	double	   *margin = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * dm->n);
	double		g0norm;
	double		prev_gnorm = 0.0;
	double		gnorm = 0.0;
	double		magnitude = 0.0;
	double		lossv;
	bool		have_factor = false;
	int			iter;

	/* the tolerance is relative to the gradient at w = 0 */
	memset(trial, 0, sizeof(double) * p);
	objective(m, dm, k, trial, b, g, z, NULL);
	g0norm = Max(vec_norm(g, p), DBL_MIN);

	if (m->loss == LOSS_LOGISTIC)
		lbfgs_phase(m, dm, k, b, w, g0norm, z, verbose);

	for (iter = 0;; iter++)
	{
		lapack_int info;

		CHECK_FOR_INTERRUPTS();
		lossv = objective(m, dm, k, w, b, g, z, &magnitude);
		gnorm = vec_norm(g, p);
		if (verbose)
			ereport(NOTICE,
					(errmsg("%s%s%sNewton iteration %d: loss %.10g, gradient norm %.3e",
							m->nclasses > 1 ? "class " : "",
							m->nclasses > 1 ? m->classes[k] : "",
							m->nclasses > 1 ? ", " : "", iter, lossv, gnorm)));

		/*
		 * Stop at the tolerance, or where Newton stalls at the rounding floor
		 * of the gradient sum (it at least halves the norm until then), as
		 * soon as some Hessian has been factored.  Either way the residual
		 * left is measured and spent.
		 */
		if (have_factor &&
			(gnorm <= GRADIENT_TOLERANCE * g0norm || iter >= MAX_NEWTON_ITERATIONS ||
			 (iter >= 2 && gnorm > 0.5 * prev_gnorm)))
			break;
		prev_gnorm = gnorm;

		/* H at the current w becomes the candidate anchor */
		cblas_dgemv(CblasRowMajor, CblasNoTrans, dm->n, p, 1.0, dm->x, p, w, 1, 0.0, margin, 1);
		*weight_sum = hessian_full(m, dm, k, w, margin, h, slab);
		info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', p, h, p);
		if (info != 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("Hessian of model \"%s\" is not positive definite", m->name),
					 errhint("Increase lambda.")));
		have_factor = true;
		memcpy(anchor, w, sizeof(double) * p);
		if (gnorm <= GRADIENT_TOLERANCE * g0norm)
			break;				/* already converged: w is its own anchor */

		/* Newton direction H^{-1} g, then backtrack on L_b */
		memcpy(step, g, sizeof(double) * p);
		info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', p, 1, h, p, step, p);
		if (info != 0)
			elog(ERROR, "LAPACKE_dpotrs failed: %d", (int) info);
		{
			double		t = 1.0;
			double		slope = cblas_ddot(p, g, 1, step, 1);

			for (;;)
			{
				double		trial_loss;

				memcpy(trial, w, sizeof(double) * p);
				cblas_daxpy(p, -t, step, 1, trial, 1);
				trial_loss = objective(m, dm, k, trial, b, NULL, z, NULL);
				if (trial_loss <= lossv - 1e-4 * t * slope || t < 1e-10)
					break;
				/* near the optimum the decrease is below the loss's rounding */
				if (t == 1.0 && trial_loss <= lossv + 1e-13 * fabs(lossv))
					break;
				t *= 0.5;
			}
			memcpy(w, trial, sizeof(double) * p);
		}
	}
	if (gnorm > STALL_TOLERANCE * g0norm)
		ereport(MODEL_WARNING(m),
				(errmsg("training of model \"%s\" stopped after %d Newton iterations at relative gradient norm %.3e",
						m->name, iter, gnorm / g0norm),
				 errdetail("The residual is measured and counted in the spent budget.")));

	packed_from_full(h, p, factor);
	pfree(g);
	pfree(step);
	pfree(trial);
	pfree(h);
	pfree(slab);
	pfree(z);
	pfree(margin);
	/* rounding of the computed gradient: 2 (n + p) eps per unit magnitude */
	return gnorm + 2.0 * (dm->n + p) * DBL_EPSILON * magnitude;
}

/*
 * The packed lower Cholesky factor of H = sum_i l''(w.x_i) x_i x_i' +
 * Lambda I at w on the design, and its weight sum C: one O(n p^2) pass and
 * an O(p^3) factor.  Returns false when H is not positive definite.
 */
bool
design_hessian_factor(UnlearnModel *m, const DesignMatrix *dm, int k, const double *w,
					  double *factor, double *weight_sum)
{
	int			p = m->p;
	double	   *h = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	double	   *slab = palloc(sizeof(double) * SLAB_ROWS * p);
	double	   *margin = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(dm->n, 1));
	lapack_int	info;

	cblas_dgemv(CblasRowMajor, CblasNoTrans, dm->n, p, 1.0, dm->x, p, w, 1, 0.0, margin, 1);
	*weight_sum = hessian_full(m, dm, k, w, margin, h, slab);
	info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', p, h, p);
	if (info == 0)
		packed_from_full(h, p, factor);
	pfree(h);
	pfree(slab);
	pfree(margin);
	return info == 0;
}

/* K' = X'X, packed. */
void
gram_of_design(const DesignMatrix *dm, double *gram_packed)
{
	int			p = dm->p;
	double	   *full = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);

	memset(full, 0, sizeof(double) * p * p);
	cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, dm->n, 1.0, dm->x, p, 0.0, full, p);
	packed_from_full(full, p, gram_packed);
	pfree(full);
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
	DesignMatrix dm;
	char	   *relation = relation_qualified_name(m->source);
	bool		discover = ((m->classes == NULL || m->classes_declared) && m->loss == LOSS_LOGISTIC);
	bool		enough_classes;
	int			k;
	int			p;
	Size		packed;

	enough_classes = load_design(m, relation, &dm, discover);
	if (dm.n == 0 && m->classes_declared)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("no row of table %s has a label among the declared classes of model \"%s\"",
						relation, m->name),
				 errhint("Declare the labels the rows have, or leave classes out to take them from the rows.")));
	if (dm.n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("every row of table %s has a null in a column of model \"%s\"",
						relation, m->name),
				 errhint("Fill in the model's columns of some rows before training.")));
	if (!enough_classes)
	{
		free_design(&dm);
		return false;
	}
	linalg_parallel(true);
	p = m->p;
	if (p > dm.n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has more features (%d) than rows (%lld)",
						m->name, p, (long long) dm.n),
				 errhint("Add rows, or train on fewer features.")));
	map_design(m, &dm, true);

	m->reg = m->lambda * dm.n;
	m->rows = dm.n;
	m->skipped = dm.skipped;
	m->trained_rows = dm.n;
	packed = PACKED_SIZE(p);

	if (fresh_noise || m->noise == NULL)
	{
		m->noise = palloc(sizeof(double) * m->nclasses * p);
		draw_gaussian_noise(m->noise, m->nclasses * p, m->sigma);
	}
	m->coef = palloc0(sizeof(double) * m->nclasses * p);
	m->anchor = palloc(sizeof(double) * m->nclasses * p);
	m->factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * packed * m->nclasses);
	m->gram = MODEL_HAS_GRAM(m) ? MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * packed) : NULL;
	m->class_spent = palloc(sizeof(double) * m->nclasses);
	m->weight_sum = palloc(sizeof(double) * m->nclasses);

	for (k = 0; k < m->nclasses; k++)
	{
		m->class_spent[k] = fit_class(m, &dm, k, m->noise + (Size) k * p,
									  m->coef + (Size) k * p, m->anchor + (Size) k * p,
									  m->factor + packed * k, &m->weight_sum[k], verbose);
	}
	if (MODEL_HAS_GRAM(m))
	{
		gram_of_design(&dm, m->gram);
		m->gram_bound = packed_max_eigenvalue_bound(m->gram, p);
	}
	else
		m->gram_bound = 0.0;	/* unused */
	m->spent = combine_class_spent(m->class_spent, m->nclasses);
	m->budget = gaussian_budget(m->sigma, m->epsilon, m->delta);
	linalg_parallel(false);

	free_design(&dm);
	return true;
}
