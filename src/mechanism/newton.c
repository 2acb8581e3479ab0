/*-------------------------------------------------------------------------
 *
 * newton.c
 *	  The Newton mechanism: certified Newton removal and addition of rows
 *	  (Eq. 3 and Eq. 6), the per-step residual bounds (certified-removal.md
 *	  §4) and the budget rule of Algorithm 2.  Maths only: the passes over
 *	  the table that a re-anchoring, a retrain or the exact bound need, and
 *	  the decisions between them, are exec/maintain.c's.
 *
 * One step moves rows S- out of and rows S+ into the model:
 *
 *	 Delta = sum_{S-} l'(w.x_r) x_r - sum_{S+} l'(w.x_r) x_r
 *	 H    <- H - sum_{S-} c_r x_r x_r' + sum_{S+} c_r x_r x_r',  c_r = l''(w0.x_r)
 *	 C    <- C - sum_{S-} c_r + sum_{S+} c_r
 *	 K'   <- K' - sum_{S-} x_r x_r' + sum_{S+} x_r x_r'	(guo only)
 *	 v     = H^{-1} Delta,  w <- w + v
 *
 * H is the stale Hessian built at the anchor w0, so c_r is evaluated at w0
 * (certified-removal.md §5).  With t_i = x_i.v, the new residual is u_prev
 * + R + (H_w - H)v + (Hv - Delta) (§4.2), R = sum_i r_i x_i the Taylor
 * remainder, and the bound of one step is, with delta = ||w - w0|| and q =
 * v'(H - Lambda I)v = sum_i c_i t_i^2:
 *
 *	 taylor: (1/2) e^(||v|| + delta) q + min((e^delta - 1) sqrt(C q), e^delta sqrt(s q))
 *	 guo:	 gamma ||X'||_2 ||v|| ||X'v|| + gamma ||X'(w - w0)|| ||X'v||
 *
 * taylor is the self-concordant form of §4.2's Taylor bound.  For the
 * logistic loss |l'''| = l'' |1 - 2 sigma| <= l'', so l''(z + s) <= l''(z)
 * e^|s| and |l''(z + s) - l''(z)| <= l''(z) (e^|s| - 1).  Hence |r_i| <=
 * l''(w.x_i) (e^|t_i| - 1 - |t_i|) <= (1/2) e^|t_i| l''(w.x_i) t_i^2, with
 * |t_i| <= ||v|| and l''(w.x_i) <= c_i e^delta as ||x_i|| <= 1: the first
 * term.  And ||(H_w - H)v|| <= sum_i |l''(w.x_i) - c_i| |t_i| <= (e^delta -
 * 1) sum_i c_i |t_i| <= (e^delta - 1) sqrt(C) sqrt(q) (Cauchy-Schwarz): the
 * second.  With d_i = |(w - w0).x_i| <= delta instead, e^d_i - 1 <= d_i
 * e^delta and Cauchy-Schwarz give e^delta sqrt(s q), s = sum_i c_i d_i^2 =
 * (w - w0)'(H - Lambda I)(w - w0); the step takes the smaller.  q and s come
 * from the factor as ||L'u||^2 - Lambda ||u||^2; no Gram matrix is needed.
 *
 * Both add a backward-error bound on the solve, ||L L' v - Delta|| <=
 * (2 gamma_p + gamma_p^2) ||L||_F^2 ||v|| (Higham, Thm 8.5), and the
 * rounding of the residual sum.  The exact bound instead measures R over
 * the rows once per statement:
 *
 *	 R = g(w_end; D') - g(w_start; D') - Delta(w_start),
 *	 g(w; D) = sum_i l'(w.x_i) x_i + Lambda w,
 *
 * which is exactly the change of the residual whatever steps were taken.
 *
 * Cost per row: its share of the factor down-date (one rank-k down-date
 * per statement, cholesky_modify.c) or its rank-one update, O(p^2) per
 * class; per step, one packed solve and one packed triangular product
 * (guo: K''s DSPR or DSYRK and a DSPMV); the exact bound adds one O(n p)
 * pass per statement.
 * Nothing here is O(p^3) or scans the table.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

#include "miscadmin.h"


static double
row_target(UnlearnModel *m, const StepRows *rows, int i, int k)
{
	if (m->nclasses > 1)
		return rows->cls[i] == k ? 1.0 : -1.0;
	return rows->y[i];
}

/* a statement's rows and their targets, for the steps */
void
step_rows_prepare(UnlearnModel *m, RowBatch *batch, StepRows *rows)
{
	int			i;

	rows->count = batch ? batch->count : 0;
	rows->x = batch ? batch->x : NULL;
	rows->y = palloc(sizeof(double) * Max(rows->count, 1));
	rows->cls = palloc(sizeof(int) * Max(rows->count, 1));
	for (i = 0; i < rows->count; i++)
		rows->cls[i] = label_to_target(m, batch->labels[i], batch->label_values[i], &rows->y[i]);
}

/*
 * Delta of class k at w over the removed rows minus the added rows, each
 * given as (x, target) through a StepRows view and an offset into x.
 */
static void
accumulate_delta(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
				 const double *w, double sign, double *delta)
{
	int			p = m->p;
	int			i;

	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;
		double		z = vec_dot(w, x, p);

		cblas_daxpy(p, sign * loss_d1(m->loss, z, row_target(m, rows, i, k)), x, 1, delta, 1);
	}
}

typedef enum StepOutcome
{
	STEP_OK,
	STEP_NUMERICAL
} StepOutcome;

/*
 * Per-statement quantities kept up to date across steps so that a step
 * makes as few passes over the O(p^2) matrices as possible:
 *	drift_prod[k] = K' (w_k - w0_k)		(one DSPMV per class per statement)
 *	factor_norm2[k] = ||L_k||_F^2 = trace(H_k)
 */
typedef struct StepCache
{
	double	   *drift_prod;
	double	   *factor_norm2;
} StepCache;

static void
init_step_cache(UnlearnModel *m, StepCache *cache)
{
	int			p = m->p;
	Size		packed = PACKED_SIZE(p);
	double	   *drift = palloc(sizeof(double) * p);
	int			k,
				j;

	cache->drift_prod = MODEL_HAS_GRAM(m) ? palloc(sizeof(double) * m->nclasses * p) : NULL;
	cache->factor_norm2 = palloc(sizeof(double) * m->nclasses);
	for (k = 0; k < m->nclasses; k++)
	{
		const double *lfac = m->factor + packed * k;

		if (cache->drift_prod)
		{
			for (j = 0; j < p; j++)
				drift[j] = m->coef[(Size) k * p + j] - m->anchor[(Size) k * p + j];
			packed_quadratic(m->gram, p, drift, cache->drift_prod + (Size) k * p);
		}
		cache->factor_norm2[k] = vec_dot(lfac, lfac, (int) packed);
	}
	pfree(drift);
}

/*
 * K' += sign * sum of x x' over rows [from, from + count), keeping every
 * class's drift product K'(w_k - w0_k) in step.  Many rows go through one
 * level-3 DSYRK on the unpacked matrix, few through DSPR.
 */
static void
update_gram(UnlearnModel *m, StepCache *cache, const StepRows *rows, int from, int count,
			double sign)
{
	int			p = m->p;
	int			i,
				k;

	if (count == 0 || !MODEL_HAS_GRAM(m))
		return;
	m->gram_changed = true;
	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;

		for (k = 0; k < m->nclasses; k++)
		{
			const double *w = m->coef + (Size) k * p;
			const double *w0 = m->anchor + (Size) k * p;
			double		a = vec_dot(w, x, p) - vec_dot(w0, x, p);

			cblas_daxpy(p, sign * a, x, 1, cache->drift_prod + (Size) k * p, 1);
		}
		/* lambda_max(K + x x') <= lambda_max(K) + ||x||^2; a removal keeps it */
		if (sign > 0)
			m->gram_bound += vec_dot(x, x, p);
	}
	if (count < 8)
		for (i = from; i < from + count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, sign, rows->x + (Size) i * p, 1, m->gram);
	else
	{
		double	   *full = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);

		full_from_packed(m->gram, p, full);
		cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, count, sign,
					rows->x + (Size) from * p, p, 1.0, full, p);
		packed_from_full(full, p, m->gram);
		pfree(full);
	}
}

/*
 * u'(H - Lambda I)u = ||L'u||^2 - Lambda ||u||^2 for the factor L of H,
 * rounded up; work is a p-vector.
 */
static double
factor_data_quadratic(UnlearnModel *m, const double *lfac, const double *u, double *work)
{
	int			p = m->p;
	double		unorm2 = vec_dot(u, u, p);

	memcpy(work, u, sizeof(double) * p);
	packed_lower_transpose_product(lfac, p, work);
	return Max(vec_dot(work, work, p) * (1.0 + 4.0 * p * DBL_EPSILON) -
			   m->reg * unorm2 * (1.0 - 4.0 * p * DBL_EPSILON), 0.0);
}

/* sum over rows of |l'(w.x)| ||x||: the size of the terms Delta sums */
static double
delta_magnitude(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
				const double *w)
{
	int			p = m->p;
	double		sum = 0.0;
	int			i;

	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;

		sum += fabs(loss_d1(m->loss, vec_dot(w, x, p), row_target(m, rows, i, k))) *
			vec_norm(x, p);
	}
	return sum;
}

/*
 * Least squares: the step is exact in exact arithmetic (gamma = 0), so
 * all it adds to the residual is rounding.  Three parts, each an a-priori
 * bound: the solve, ||L L' v - Delta|| <= (2 gamma_p + gamma_p^2)
 * ||L||_F^2 ||v|| (Higham, Thm 8.5); Delta itself, a sum of k terms of
 * size sum |l'| ||x||; and w <- w + v, which moves each weight by at most
 * eps |w_j + v_j|, so the residual by at most ||H|| eps ||w + v||.  A row
 * with an outlying label makes these large, and so makes the budget rule
 * measure the residual (see budget_exceeded) instead of keeping weights
 * that cancellation has corrupted.
 */
static double
squared_rounding(UnlearnModel *m, StepCache *cache, int k, const StepRows *rems, int rem_from,
				 int rem_count, const StepRows *adds, int add_from, int add_count,
				 const double *w, const double *v, double gamma_p)
{
	int			p = m->p;
	double		v_norm = vec_norm(v, p);
	double		h_norm = cache->factor_norm2[k];
	double		after = 0.0;
	double		magnitude;
	int			j;

	for (j = 0; j < p; j++)
		after += (w[j] + v[j]) * (w[j] + v[j]);
	magnitude = delta_magnitude(m, rems, rem_from, rem_count, k, w) +
		delta_magnitude(m, adds, add_from, add_count, k, w);
	return ((2.0 * gamma_p + gamma_p * gamma_p) * h_norm * v_norm +
			rounding_allowance(rem_count + add_count, p, magnitude) +
			2.0 * DBL_EPSILON * h_norm * sqrt(after)) * (1.0 + 64.0 * p * DBL_EPSILON);
}

/*
 * One Newton step moving rems[rem_from, +rem_count) out and
 * adds[add_from, +add_count) in.  Adds each class's bound to step_bound.
 */
static StepOutcome
newton_step(UnlearnModel *m, StepCache *cache, const StepRows *rems, int rem_from, int rem_count,
			const StepRows *adds, int add_from, int add_count, double *step_bound)
{
	int			p = m->p;
	Size		packed = PACKED_SIZE(p);
	double		gamma = loss_gamma(m->loss);
	double		gamma_p = p * DBL_EPSILON / (1.0 - p * DBL_EPSILON);
	double	   *delta = palloc(sizeof(double) * p);
	double	   *kv = palloc(sizeof(double) * p);
	double	   *v = palloc(sizeof(double) * p);
	int			i,
				k;

	/* the factors first: Delta is taken at the current w, which has not moved */
	for (k = 0; k < m->nclasses; k++)
	{
		double	   *w0 = m->anchor + (Size) k * p;
		double	   *lfac = m->factor + packed * k;

		/* H += c x x' for added rows first, then down-date removed rows */
		for (i = add_from; i < add_from + add_count; i++)
		{
			const double *x = adds->x + (Size) i * p;
			double		c = loss_d2(m->loss, vec_dot(w0, x, p), row_target(m, adds, i, k));

			chol_rank1_update(lfac, p, x, c);
			m->weight_sum[k] += c;
			cache->factor_norm2[k] += c * vec_dot(x, x, p);
			/* down-dates below leave factor_norm2 an upper bound */
		}
		if (rem_count > 0)
		{
			double	   *weights = palloc(sizeof(double) * rem_count);

			for (i = 0; i < rem_count; i++)
			{
				const double *x = rems->x + (Size) (rem_from + i) * p;

				weights[i] = loss_d2(m->loss, vec_dot(w0, x, p),
									 row_target(m, rems, rem_from + i, k));
				m->weight_sum[k] -= weights[i];
			}
			if (!chol_rankk_downdate(lfac, p, rems->x + (Size) rem_from * p, weights, rem_count))
				return STEP_NUMERICAL;
			pfree(weights);
		}
	}
	/* K' and the drift products (guo only) change once for all classes */
	update_gram(m, cache, adds, add_from, add_count, 1.0);
	update_gram(m, cache, rems, rem_from, rem_count, -1.0);

	for (k = 0; k < m->nclasses; k++)
	{
		double	   *w = m->coef + (Size) k * p;
		double	   *w0 = m->anchor + (Size) k * p;
		double	   *lfac = m->factor + packed * k;
		double	   *drift_prod = cache->drift_prod ? cache->drift_prod + (Size) k * p : NULL;
		double		bound = 0.0;

		memset(delta, 0, sizeof(double) * p);
		accumulate_delta(m, rems, rem_from, rem_count, k, w, 1.0, delta);
		accumulate_delta(m, adds, add_from, add_count, k, w, -1.0, delta);

		/* v = H^{-1} Delta */
		memcpy(v, delta, sizeof(double) * p);
		chol_solve_packed(lfac, p, v);
		if (gamma > 0.0 && m->bound != BOUND_EXACT)
		{
			double		v_norm = vec_norm(v, p);
			double		solve_error;

			/*
			 * ||L L' v - Delta|| for v from two triangular solves: each is
			 * backward stable with |dL| <= gamma_p |L| (Higham, Thm 8.5),
			 * so the error is at most (2 gamma_p + gamma_p^2) ||L||_F^2 ||v||.
			 */
			solve_error = (2.0 * gamma_p + gamma_p * gamma_p) * cache->factor_norm2[k] * v_norm;

			if (m->bound == BOUND_GUO)
			{
				double		quad,
							drift_quad = 0.0;
				int			j;

				quad = Max(packed_quadratic(m->gram, p, v, kv), 0.0);	/* ||X'v||^2 */
				for (j = 0; j < p; j++)
					drift_quad += (w[j] - w0[j]) * drift_prod[j];	/* ||X'(w-w0)||^2 */
				drift_quad = Max(drift_quad, 0.0);
				bound = gamma * sqrt(m->gram_bound) * v_norm * sqrt(quad)
					+ gamma * sqrt(drift_quad) * sqrt(quad);
				/* w moves by v: K'(w - w0) moves by K'v */
				cblas_daxpy(p, 1.0, kv, 1, drift_prod, 1);
			}
			else
			{
				/*
				 * taylor, in the self-concordant form (see the header):
				 * q = sum_i c_i t_i^2 = v'(H - Lambda I)v = ||L'v||^2 -
				 * Lambda ||v||^2, each side rounded the safe way.
				 */
				double		drift,
							q,
							s_quad,
							weight,
							stale;

				q = factor_data_quadratic(m, lfac, v, kv);
				/* delta (Delta) is spent: it holds w - w0 from here on */
				memcpy(delta, w, sizeof(double) * p);
				cblas_daxpy(p, -1.0, w0, 1, delta, 1);
				drift = vec_norm(delta, p) * (1.0 + p * DBL_EPSILON);
				s_quad = factor_data_quadratic(m, lfac, delta, kv);
				weight = Max(m->weight_sum[k], 0.0) * (1.0 + 2.0 * (m->rows + adds->count + p) * DBL_EPSILON);

				/*
				 * the stale-Hessian term in its two forms; with d_i =
				 * |(w - w0).x_i| <= delta, e^d_i - 1 <= d_i e^delta gives
				 * the second, e^delta sqrt(s q), s = sum_i c_i d_i^2
				 */
				stale = Min(expm1(drift) * sqrt(weight * q), exp(drift) * sqrt(s_quad * q));
				bound = 0.5 * exp(v_norm + drift) * q + stale;
			}
			bound += solve_error;
			/* cover the rounding of the quadratic forms */
			bound = bound * (1.0 + 64.0 * p * DBL_EPSILON);

			/*
			 * and the rounding of the residual itself, a sum of n terms with
			 * |l'| <= 1: 2 (n + p) eps (n + Lambda ||w||)
			 */
			bound += rounding_allowance(m->rows + adds->count, p,
										m->rows + adds->count + m->reg * vec_norm(w, p));
		}
		else if (gamma == 0.0)
			bound = squared_rounding(m, cache, k, rems, rem_from, rem_count, adds, add_from,
									 add_count, w, v, gamma_p);
		/* an overflow (e^drift far from the anchor) must spend everything, never nothing */
		if (!(bound >= 0.0))
			bound = INFINITY;
		step_bound[k] += bound;
		cblas_daxpy(p, 1.0, v, 1, w, 1);
	}
	pfree(delta);
	pfree(kv);
	pfree(v);
	return STEP_OK;
}

/*
 * The precision limit of least squares: SQUARED_PRECISION of the size of
 * the gradient's terms at the optimum, Lambda ||w|| + ||b|| (combined over
 * classes).  A residual within it makes w equal the exact minimiser to
 * that relative precision; a statement whose rounding allowance passes it
 * (a row with an outlying label, which cancellation makes w forget only
 * approximately) makes the budget rule measure the residual, and retrain
 * if the measurement does not fit either.
 */
#define SQUARED_PRECISION 1e-6

static double
squared_precision_limit(UnlearnModel *m)
{
	double		sum = 0.0;
	int			k;

	for (k = 0; k < m->nclasses; k++)
	{
		double		size = m->reg * vec_norm(m->coef + (Size) k * m->p, m->p) +
			vec_norm(m->noise + (Size) k * m->p, m->p);

		sum += size * size;
	}
	return SQUARED_PRECISION * sqrt(sum);
}

/*
 * The most beta may reach: eps', whatever the loss and the labels.  With
 * sigma = 0 (budget 0, no privacy claim) least squares, which spends only
 * rounding, stays exact to the precision limit instead, and the logistic
 * loss retrains at every change.
 */
double
budget_limit(UnlearnModel *m)
{
	if (m->loss == LOSS_SQUARED && m->budget == 0.0)
		return squared_precision_limit(m);
	return m->budget;
}

/*
 * Does a model whose noise certifies something (sigma > 0) start beyond
 * its budget?  Its training residual alone passes eps': nothing it could
 * release is certified.
 */
bool
training_exceeds_budget(UnlearnModel *m)
{
	return m->budget > 0.0 && m->spent > budget_limit(m);
}

/* Would beta pass the budget? */
bool
budget_exceeded(UnlearnModel *m, const double *class_spent_after)
{
	return combine_class_spent(class_spent_after, m->nclasses) > budget_limit(m);
}

/*
 * Bring matrices re-anchored over the table after a statement, D' = D - R
 * + A, back to D, the rows before it, from which the statement's step
 * starts: H, C and K' by a rank-one update per removed row and a down-date
 * by the added rows, and the residual u(w; D') (in u, with its rounding
 * allowance) the same way:
 *
 *	 u(w; D) = u(w; D') + sum_R l'(w.x) x - sum_A l'(w.x) x,
 *
 * so that beta_k = ||u_k(w; D)|| plus the measured sum's allowance and
 * that of the added terms, 2 (|R| + |A| + p) eps sum |l'|.  Returns false
 * if some H is not positive definite.
 */
bool
newton_move_back(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *u,
				 const double *allowance)
{
	int			p = m->p;
	int			K = m->nclasses;
	Size		packed = PACKED_SIZE(p);
	double	   *weights = palloc(sizeof(double) * Max(adds->count, 1));
	int			i,
				k;

	for (k = 0; k < K; k++)
	{
		double	   *lfac = m->factor + packed * k;
		double	   *uk = u + (Size) k * p;
		const double *w = m->coef + (Size) k * p;
		double		d1_sum = 0.0;

		for (i = 0; i < rems->count; i++)
		{
			const double *x = rems->x + (Size) i * p;
			double		z = vec_dot(w, x, p);
			double		c = loss_d2(m->loss, z, row_target(m, rems, i, k));

			chol_rank1_update(lfac, p, x, c);
			m->weight_sum[k] += c;
			d1_sum += fabs(loss_d1(m->loss, z, row_target(m, rems, i, k)));
		}
		for (i = 0; i < adds->count; i++)
		{
			const double *x = adds->x + (Size) i * p;
			double		z = vec_dot(w, x, p);

			weights[i] = loss_d2(m->loss, z, row_target(m, adds, i, k));
			m->weight_sum[k] -= weights[i];
			d1_sum += fabs(loss_d1(m->loss, z, row_target(m, adds, i, k)));
		}
		if (adds->count > 0 && !chol_rankk_downdate(lfac, p, adds->x, weights, adds->count))
			return false;
		accumulate_delta(m, rems, 0, rems->count, k, w, 1.0, uk);
		accumulate_delta(m, adds, 0, adds->count, k, w, -1.0, uk);
		m->class_spent[k] = vec_norm(uk, p) + allowance[k] +
			2.0 * (rems->count + adds->count + p) * DBL_EPSILON * d1_sum;
	}
	m->spent = combine_class_spent(m->class_spent, K);
	if (MODEL_HAS_GRAM(m))
	{
		for (i = 0; i < rems->count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, 1.0, rems->x + (Size) i * p, 1, m->gram);
		for (i = 0; i < adds->count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, -1.0, adds->x + (Size) i * p, 1, m->gram);
	}
	pfree(weights);
	return true;
}

/*
 * One statement's steps: one step over all its rows, or (steps => 'row')
 * one per row, removals first.  The bound of each class goes to
 * statement_bound.  Returns false if the factor lost positive
 * definiteness (the caller retrains).
 */
bool
newton_steps(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *statement_bound)
{
	StepCache	cache;
	int			i;

	init_step_cache(m, &cache);
	if (!m->per_row_steps)
		return newton_step(m, &cache, rems, 0, rems->count, adds, 0, adds->count,
						   statement_bound) == STEP_OK;
	for (i = 0; i < rems->count + adds->count; i++)
	{
		StepOutcome outcome;

		CHECK_FOR_INTERRUPTS();
		if (i < rems->count)
			outcome = newton_step(m, &cache, rems, i, 1, adds, 0, 0, statement_bound);
		else
			outcome = newton_step(m, &cache, rems, 0, 0, adds, i - rems->count, 1, statement_bound);
		if (outcome == STEP_NUMERICAL)
			return false;
	}
	return true;
}

/*
 * The exact bound's remainder of class k (see the header): diff holds
 * g(w_end; D') - g(w_start; D') and becomes R = that - Delta(w_start).
 */
void
newton_exact_remainder(UnlearnModel *m, const StepRows *rems, const StepRows *adds, int k,
					   const double *w_start, double *diff)
{
	accumulate_delta(m, rems, 0, rems->count, k, w_start, -1.0, diff);
	accumulate_delta(m, adds, 0, adds->count, k, w_start, 1.0, diff);
}
