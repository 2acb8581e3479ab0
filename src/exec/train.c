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
#include "exec/exec.h"

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

double
design_target(UnlearnModel *m, const DesignMatrix *dm, int64 i, int k)
{
	if (dm->cls != NULL && m->released.nclasses > 1)
		return dm->cls[i] == k ? 1.0 : -1.0;
	return dm->y[i];
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
 * "nulls": "skip") the rows with a null in a model column (under
 * "impute", a null label), which
 * *skipped receives.  Counted as the table's owner.
 */
int64
model_row_count(UnlearnModel *m, int64 *skipped)
{
	char	   *relation = relation_qualified_name(m->def.source);
	StringInfoData cond;
	ExtensionContext ctx;
	bool		isnull;
	int64		total,
				kept;

	*skipped = 0;
	if (m->def.nulls == NULLS_ERROR && !m->def.classes_declared && m->def.filter == NULL)
		return relation_row_count(m->def.source);
	initStringInfo(&cond);
	append_model_row_condition(m, &cond, 1, true);
	enter_table_owner_context(m->def.source, &ctx);
	if (execute_with_model_condition(m, psprintf("SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE %s) FROM %s",
												 cond.data, model_rows_of(m, relation)), 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not count the rows of %s", relation);
	total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	kept = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	leave_extension_context(&ctx);
	*skipped = total - kept;
	return kept;
}

/*
 * A cursor over the model's rows of relation (its table), in
 * build_feature_select's layout.  Names are resolved when the cursor is
 * planned, under pin_expression_settings: expressions see built-ins only.
 */
static Portal
model_rows_cursor(UnlearnModel *m, const char *relation)
{
	int			level = pin_expression_settings();
	Portal		portal = SPI_cursor_open_with_args(NULL,
												   build_feature_select(m, model_rows_of(m, relation), NULL),
												   0, NULL, NULL, NULL, false, 0);

	unpin_expression_settings(level);
	return portal;
}

/*
 * Read the model's rows from its table (relation: its qualified name), as
 * the table's owner, into a row-major matrix of raw features (unmapped;
 * see map_design), with the targets of the model's classes.  Rows of a
 * label that is none of declared classes are outside the model, counted
 * as skipped.  The audit paths (verify.c, plan.c, the exact bound) use
 * it; training and re-anchoring read the rows by passes (train_pass.c).
 */
void
load_design(UnlearnModel *m, const char *relation, DesignMatrix *dm)
{
	Portal		portal;
	int64		expected;
	int64		i = 0;
	int64		read = 0;
	double	   *raw = NULL;
	ExtensionContext ctx;

	memset(dm, 0, sizeof(*dm));
	expected = relation_row_count(m->def.source);
	if (expected == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("table %s has no rows to train model \"%s\" on", relation, m->def.name),
				 errhint("Insert rows before training.")));

	/* planned and run as the table's owner (privilege.c) */
	enter_table_owner_context(m->def.source, &ctx);
	portal = model_rows_cursor(m, relation);
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
				/* first row in the model: size X (the census set d) */
				m->def.p = m->def.dims + (m->def.intercept ? 1 : 0);
				dm->p = m->def.p;
				dm->x = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(double) * m->def.p * expected);
				dm->y = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * expected);
				if (m->released.nclasses > 1)
					dm->cls = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int) * expected);
			}
			raw = dm->x + i * m->def.p;
			if (!decode_spi_row(m, tup, desc, raw, &label, &label_value) ||
				!model_takes_label(m, label, label_value))
			{
				dm->skipped++;
				continue;
			}
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
		m->def.scale = row_map_divisor(m->def.p, m->def.loss);
		if (m->def.preprocess == PREPROCESS_STANDARDIZE)
			column_map_fit(m, dm->x, dm->n, m->def.p);
	}
	model_row_map(m, &map);
	for (i = 0; i < dm->n; i++)
		map_row(&map, dm->x + i * m->def.p);
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
	int			p = m->def.p;
	double		lossv = 0.0;
	double		mag = 0.0;
	int64		i;

	cblas_dgemv(CblasRowMajor, CblasNoTrans, dm->n, p, 1.0, dm->x, p, w, 1, 0.0, z, 1);
	for (i = 0; i < dm->n; i++)
	{
		double		y = design_target(m, dm, i, k);
		double		zi = z[i];

		lossv += loss_value(m->def.loss, zi, y);
		z[i] = loss_d1(m->def.loss, zi, y);
		mag += fabs(z[i]);
	}
	if (g != NULL)
	{
		cblas_dgemv(CblasRowMajor, CblasTrans, dm->n, p, 1.0, dm->x, p, z, 1, 0.0, g, 1);
		cblas_daxpy(p, m->def.reg, w, 1, g, 1);
		if (b != NULL)
			cblas_daxpy(p, 1.0, b, 1, g, 1);
	}
	lossv += 0.5 * m->def.reg * cblas_ddot(p, w, 1, w, 1);
	if (b != NULL)
		lossv += cblas_ddot(p, b, 1, w, 1);
	if (magnitude)
		*magnitude = mag + m->def.reg * vec_norm(w, p) + (b ? vec_norm(b, p) : 0.0);
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
	int			p = m->def.p;
	double		weight_sum = 0.0;
	int64		i0;
	int			j;

	memset(h, 0, sizeof(double) * p * p);
	if (m->def.loss == LOSS_SQUARED)
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
				double		c = loss_d2(m->def.loss, z_margin[i], design_target(m, dm, i, k));

				weight_sum += c;
				memcpy(slab + (Size) r * p, dm->x + i * p, sizeof(double) * p);
				cblas_dscal(p, sqrt(c), slab + (Size) r * p, 1);
			}
			cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, rows, 1.0,
						slab, p, 1.0, h, p);
			CHECK_FOR_INTERRUPTS();
		}
	for (j = 0; j < p; j++)
		h[(Size) j * p + j] += m->def.reg;
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
	int			p = m->def.p;
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
							m->released.nclasses > 1 ? "class " : "",
							m->released.nclasses > 1 ? m->released.classes[k] : "",
							m->released.nclasses > 1 ? ", " : "", iter, f, gnorm)));
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
 * Fit class k with noise b (NULL: none) from w (in: start, out:
 * solution): L-BFGS to a moderate tolerance, then Newton steps, which
 * converge quadratically.  Newton
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
	int			p = m->def.p;
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

	if (m->def.loss == LOSS_LOGISTIC)
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
							m->released.nclasses > 1 ? "class " : "",
							m->released.nclasses > 1 ? m->released.classes[k] : "",
							m->released.nclasses > 1 ? ", " : "", iter, lossv, gnorm)));

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
					 errmsg("Hessian of model \"%s\" is not positive definite", m->def.name),
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
						m->def.name, iter, gnorm / g0norm),
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
	return gnorm + rounding_allowance(dm->n, p, magnitude);
}

/*
 * Fit class k of m on dm with noise b from w by chord steps with a fixed
 * Hessian factor near the optimum, w <- w - H0^-1 g: one O(n p) gradient
 * and one O(p^2) solve per step, converging linearly at rate
 * ||I - H0^-1 H(w*)||.  It stops at fit_class's tolerance, or where the
 * norm stops halving at its rounding floor.  Returns false (w then holds
 * the last step) when it converged no further than STALL_TOLERANCE in
 * CHORD_MAX_STEPS: H0 is too far from the optimum's Hessian.
 */
#define CHORD_MAX_STEPS 40

bool
fit_class_chord(UnlearnModel *m, const DesignMatrix *dm, int k, const double *b,
				const double *factor, double *w)
{
	int			p = m->def.p;
	double	   *g = palloc(sizeof(double) * p);
	double	   *z = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(dm->n, 1));
	double		g0norm,
				gnorm,
				prev = DBL_MAX;
	int			step;
	bool		converged = false;

	memset(g, 0, sizeof(double) * p);
	{
		double	   *zero = palloc0(sizeof(double) * p);

		objective(m, dm, k, zero, b, g, z, NULL);
		pfree(zero);
	}
	g0norm = Max(vec_norm(g, p), DBL_MIN);
	for (step = 0; step <= CHORD_MAX_STEPS; step++)
	{
		CHECK_FOR_INTERRUPTS();
		objective(m, dm, k, w, b, g, z, NULL);
		gnorm = vec_norm(g, p);
		if (gnorm <= GRADIENT_TOLERANCE * g0norm ||
			(gnorm <= STALL_TOLERANCE * g0norm && gnorm > 0.5 * prev))
		{
			converged = true;
			break;
		}
		if (step == CHORD_MAX_STEPS)
			break;
		prev = gnorm;
		chol_solve_packed(factor, p, g);
		cblas_daxpy(p, -1.0, g, 1, w, 1);
	}
	pfree(g);
	pfree(z);
	return converged;
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
	int			p = m->def.p;
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
 * Train the classes of m (census done, classes chosen, p set, noise and
 * the result arrays allocated) with every row in memory: the path of a
 * catalog without the training passes' functions (before ALTER EXTENSION
 * unlearn UPDATE to 0.10.0), so that its tables' DML goes on.  O(n p)
 * memory.
 */
void
train_loaded(UnlearnModel *m, bool verbose)
{
	DesignMatrix dm;
	Size		packed = PACKED_SIZE(m->def.p);
	int			k;

	load_design(m, relation_qualified_name(m->def.source), &dm);
	map_design(m, &dm, true);
	m->def.reg = m->def.lambda * dm.n;
	m->released.rows = m->released.trained_rows = dm.n;
	for (k = 0; k < m->released.nclasses; k++)
		m->state.class_spent[k] = fit_class(m, &dm, k, m->state.noise + (Size) k * m->def.p,
									  m->released.coef + (Size) k * m->def.p,
									  m->state.anchor + (Size) k * m->def.p,
									  m->state.factor + packed * k, &m->state.weight_sum[k], verbose);
	if (MODEL_HAS_GRAM(m))
		gram_of_design(&dm, m->state.gram);
	free_design(&dm);
}

/*
 * reanchor_passes (train_pass.c) with every row in memory, for a catalog
 * without the training passes' functions: the factors, weight sums,
 * gradients of L_b at m->released.coef and their allowances, and K'.
 */
bool
reanchor_loaded(UnlearnModel *m, double *factor, double *weight_sum, double *g,
				double *allowance, int64 *rows)
{
	DesignMatrix dm;
	int			p = m->def.p;
	bool		ok = true;
	int			k;

	load_design(m, relation_qualified_name(m->def.source), &dm);
	map_design(m, &dm, false);
	for (k = 0; k < m->released.nclasses && ok; k++)
	{
		const double *w = m->released.coef + (Size) k * p;
		double		magnitude;

		ok = design_hessian_factor(m, &dm, k, w, factor + PACKED_SIZE(p) * k, &weight_sum[k]);
		design_gradient(m, &dm, k, w, m->state.noise + (Size) k * p, g + (Size) k * p, &magnitude);
		allowance[k] = rounding_allowance(dm.n, p, magnitude);
	}
	if (ok && MODEL_HAS_GRAM(m))
		gram_of_design(&dm, m->state.gram);
	*rows = dm.n;
	free_design(&dm);
	return ok;
}
