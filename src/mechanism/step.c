/*-------------------------------------------------------------------------
 *
 * step.c
 *	  The Newton update that the Newton and exact mechanisms share (Eq. 3
 *	  and Eq. 6): one step moves rows S- out of and rows S+ into the model,
 *
 *	 Delta = sum_{S-} l'(w.x_r) x_r - sum_{S+} l'(w.x_r) x_r
 *	 H    <- H - sum_{S-} c_r x_r x_r' + sum_{S+} c_r x_r x_r',  c_r = l''(w0.x_r)
 *	 C    <- C - sum_{S-} c_r + sum_{S+} c_r
 *	 K'   <- K' - sum_{S-} x_r x_r' + sum_{S+} x_r x_r'	(guo only)
 *	 v     = H^{-1} Delta,  w <- w + v
 *
 * H is the stale Hessian built at the anchor w0, so c_r is evaluated at w0
 * (certified-removal.md §5).  What a step adds to the residual is each
 * mechanism's own (newton.c, exact.c): a StepBoundFunction.
 *
 * Cost per row: its share of the factor down-date (one rank-k down-date
 * per statement, cholesky_modify.c) or its rank-one update, O(p^2) per
 * class; per step, one packed solve (guo: K''s DSPR or DSYRK and a DSPMV).
 * Nothing here is O(p^3) or reads a table.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

#include "miscadmin.h"

/* the target of row i for class k */
double
row_target(UnlearnModel *m, const StepRows *rows, int i, int k)
{
	if (m->released.nclasses > 1)
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
void
accumulate_delta(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
				 const double *w, double sign, double *delta)
{
	int			p = m->def.p;
	int			i;

	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;
		double		z = vec_dot(w, x, p);

		cblas_daxpy(p, sign * loss_d1(m->def.loss, z, row_target(m, rows, i, k)), x, 1, delta, 1);
	}
}

typedef enum StepOutcome
{
	STEP_OK,
	STEP_NUMERICAL
} StepOutcome;

static void
init_step_cache(UnlearnModel *m, StepCache *cache)
{
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double	   *drift = palloc(sizeof(double) * p);
	int			k,
				j;

	cache->drift_prod = MODEL_HAS_GRAM(m) ? palloc(sizeof(double) * m->released.nclasses * p) : NULL;
	cache->factor_norm2 = palloc(sizeof(double) * m->released.nclasses);
	for (k = 0; k < m->released.nclasses; k++)
	{
		const double *lfac = m->state.factor + packed * k;

		if (cache->drift_prod)
		{
			for (j = 0; j < p; j++)
				drift[j] = m->released.coef[(Size) k * p + j] - m->state.anchor[(Size) k * p + j];
			packed_quadratic(m->state.gram, p, drift, cache->drift_prod + (Size) k * p);
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
	int			p = m->def.p;
	int			i,
				k;

	if (count == 0 || !MODEL_HAS_GRAM(m))
		return;
	m->call.gram_changed = true;
	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;

		for (k = 0; k < m->released.nclasses; k++)
		{
			const double *w = m->released.coef + (Size) k * p;
			const double *w0 = m->state.anchor + (Size) k * p;
			double		a = vec_dot(w, x, p) - vec_dot(w0, x, p);

			cblas_daxpy(p, sign * a, x, 1, cache->drift_prod + (Size) k * p, 1);
		}
		/* lambda_max(K + x x') <= lambda_max(K) + ||x||^2; a removal keeps it */
		if (sign > 0)
			m->state.gram_bound += vec_dot(x, x, p);
	}
	if (count < 8)
		for (i = from; i < from + count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, sign, rows->x + (Size) i * p, 1, m->state.gram);
	else
	{
		double	   *full = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);

		full_from_packed(m->state.gram, p, full);
		cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, count, sign,
					rows->x + (Size) from * p, p, 1.0, full, p);
		packed_from_full(full, p, m->state.gram);
		pfree(full);
	}
}

/* sum over rows of |l'(w.x)| ||x||: the size of the terms Delta sums */
double
delta_magnitude(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
				const double *w)
{
	int			p = m->def.p;
	double		sum = 0.0;
	int			i;

	for (i = from; i < from + count; i++)
	{
		const double *x = rows->x + (Size) i * p;

		sum += fabs(loss_d1(m->def.loss, vec_dot(w, x, p), row_target(m, rows, i, k))) *
			vec_norm(x, p);
	}
	return sum;
}

/*
 * Rows from which a step refactors H (chol_refactor_modify) rather than
 * sweeping the factor once per row.  Measured at p = 785 (a rolled-back
 * DELETE of k rows, 12,000 rows, the statement's update time): the sweeps
 * took about 1.4 ms a row (74 ms at k = 50, 145 at 100, 530 at 400), the
 * refactorisation 45 to 65 ms whatever k (200 to 800), so it would pay
 * from about p / 20 rows; the threshold below is more cautious.
 */
#define REFACTOR_ROWS(p) Max(2, (p) / 4)

/*
 * The Hessian weights c = l''(w0.x) at class k's anchor of rows[from,
 * +count), into weights, with their sum moved by sign in k's weight_sum
 * (and, for added rows, c ||x||^2 added to factor_norm2, an upper bound
 * after down-dates).
 */
static void
step_row_weights(UnlearnModel *m, StepCache *cache, int k, const StepRows *rows, int from,
				 int count, double sign, double *weights)
{
	int			p = m->def.p;
	const double *w0 = m->state.anchor + (Size) k * p;
	int			i;

	for (i = 0; i < count; i++)
	{
		const double *x = rows->x + (Size) (from + i) * p;

		weights[i] = loss_d2(m->def.loss, vec_dot(w0, x, p), row_target(m, rows, from + i, k));
		m->state.weight_sum[k] += sign * weights[i];
		if (sign > 0)
			cache->factor_norm2[k] += weights[i] * vec_dot(x, x, p);
	}
}

/*
 * Class k's factor after the step's rows, H + sum_A c x x' - sum_R c x x'
 * with the weights of step_row_weights: refactored at once from
 * REFACTOR_ROWS rows on (chol_refactor_modify), else a rank-one update per
 * added row and one down-date sweep for the removed ones.  False if it is
 * not positive definite.
 */
static bool
modify_factor(UnlearnModel *m, StepCache *cache, int k, const StepRows *rems, int rem_from,
			  int rem_count, const StepRows *adds, int add_from, int add_count)
{
	int			p = m->def.p;
	double	   *lfac = m->state.factor + PACKED_SIZE(p) * k;
	double	   *add_weights = palloc(sizeof(double) * Max(add_count, 1));
	double	   *rem_weights = palloc(sizeof(double) * Max(rem_count, 1));
	bool		ok = true;
	int			i;

	step_row_weights(m, cache, k, adds, add_from, add_count, 1.0, add_weights);
	step_row_weights(m, cache, k, rems, rem_from, rem_count, -1.0, rem_weights);
	if (add_count + rem_count >= REFACTOR_ROWS(p))
		ok = chol_refactor_modify(lfac, p, adds->x + (Size) add_from * p, add_weights, add_count,
								  rems->x + (Size) rem_from * p, rem_weights, rem_count);
	else
	{
		/* H += c x x' for added rows first, then down-date removed rows */
		for (i = 0; i < add_count; i++)
			chol_rank1_update(lfac, p, adds->x + (Size) (add_from + i) * p, add_weights[i]);
		if (rem_count > 0)
			ok = chol_rankk_downdate(lfac, p, rems->x + (Size) rem_from * p, rem_weights, rem_count);
	}
	pfree(add_weights);
	pfree(rem_weights);
	return ok;
}

/*
 * One Newton step moving rems[rem_from, +rem_count) out and
 * adds[add_from, +add_count) in: the factors, K', Delta, v = H^{-1} Delta
 * and w <- w + v.  Adds each class's bound (step_bound_of, the
 * mechanism's) to step_bound.
 */
static StepOutcome
newton_step(UnlearnModel *m, StepCache *cache, const StepRows *rems, int rem_from, int rem_count,
			const StepRows *adds, int add_from, int add_count, double *step_bound,
			StepBoundFunction step_bound_of)
{
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double		gamma_p = p * DBL_EPSILON / (1.0 - p * DBL_EPSILON);
	double	   *delta = palloc(sizeof(double) * p);
	double	   *kv = palloc(sizeof(double) * p);
	double	   *v = palloc(sizeof(double) * p);
	int			k;

	/* the factors first: Delta is taken at the current w, which has not moved */
	for (k = 0; k < m->released.nclasses; k++)
		if (!modify_factor(m, cache, k, rems, rem_from, rem_count, adds, add_from, add_count))
			return STEP_NUMERICAL;
	/* K' and the drift products (guo only) change once for all classes */
	update_gram(m, cache, adds, add_from, add_count, 1.0);
	update_gram(m, cache, rems, rem_from, rem_count, -1.0);

	for (k = 0; k < m->released.nclasses; k++)
	{
		double	   *w = m->released.coef + (Size) k * p;
		double	   *w0 = m->state.anchor + (Size) k * p;
		double	   *lfac = m->state.factor + packed * k;
		StepBoundInput in = {k, rems, rem_from, rem_count, adds, add_from, add_count,
		w, w0, v, delta, kv, gamma_p};
		double		bound;

		memset(delta, 0, sizeof(double) * p);
		accumulate_delta(m, rems, rem_from, rem_count, k, w, 1.0, delta);
		accumulate_delta(m, adds, add_from, add_count, k, w, -1.0, delta);

		/* v = H^{-1} Delta */
		memcpy(v, delta, sizeof(double) * p);
		chol_solve_packed(lfac, p, v);
		bound = step_bound_of(m, cache, &in);
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
 * One statement's Newton update: one step over all its rows, or (steps =>
 * 'row') one per row, removals first.  The bound of each class, as
 * step_bound_of measures it, goes to statement_bound.  Returns false if
 * the factor lost positive definiteness (the caller retrains).
 */
bool
newton_update(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *statement_bound,
			  StepBoundFunction step_bound_of)
{
	StepCache	cache;
	int			i;

	init_step_cache(m, &cache);
	if (!m->def.per_row_steps)
		return newton_step(m, &cache, rems, 0, rems->count, adds, 0, adds->count,
						   statement_bound, step_bound_of) == STEP_OK;
	for (i = 0; i < rems->count + adds->count; i++)
	{
		StepOutcome outcome;

		CHECK_FOR_INTERRUPTS();
		if (i < rems->count)
			outcome = newton_step(m, &cache, rems, i, 1, adds, 0, 0, statement_bound,
								  step_bound_of);
		else
			outcome = newton_step(m, &cache, rems, 0, 0, adds, i - rems->count, 1,
								  statement_bound, step_bound_of);
		if (outcome == STEP_NUMERICAL)
			return false;
	}
	return true;
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
	int			p = m->def.p;
	int			K = m->released.nclasses;
	Size		packed = PACKED_SIZE(p);
	double	   *weights = palloc(sizeof(double) * Max(adds->count, 1));
	int			i,
				k;

	for (k = 0; k < K; k++)
	{
		double	   *lfac = m->state.factor + packed * k;
		double	   *uk = u + (Size) k * p;
		const double *w = m->released.coef + (Size) k * p;
		double		d1_sum = 0.0;

		for (i = 0; i < rems->count; i++)
		{
			const double *x = rems->x + (Size) i * p;
			double		z = vec_dot(w, x, p);
			double		c = loss_d2(m->def.loss, z, row_target(m, rems, i, k));

			chol_rank1_update(lfac, p, x, c);
			m->state.weight_sum[k] += c;
			d1_sum += fabs(loss_d1(m->def.loss, z, row_target(m, rems, i, k)));
		}
		for (i = 0; i < adds->count; i++)
		{
			const double *x = adds->x + (Size) i * p;
			double		z = vec_dot(w, x, p);

			weights[i] = loss_d2(m->def.loss, z, row_target(m, adds, i, k));
			m->state.weight_sum[k] -= weights[i];
			d1_sum += fabs(loss_d1(m->def.loss, z, row_target(m, adds, i, k)));
		}
		if (adds->count > 0 && !chol_rankk_downdate(lfac, p, adds->x, weights, adds->count))
			return false;
		accumulate_delta(m, rems, 0, rems->count, k, w, 1.0, uk);
		accumulate_delta(m, adds, 0, adds->count, k, w, -1.0, uk);
		m->state.class_spent[k] = vec_norm(uk, p) + allowance[k] +
			2.0 * (rems->count + adds->count + p) * DBL_EPSILON * d1_sum;
	}
	m->released.spent = combine_class_spent(m->state.class_spent, K);
	if (MODEL_HAS_GRAM(m))
	{
		for (i = 0; i < rems->count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, 1.0, rems->x + (Size) i * p, 1, m->state.gram);
		for (i = 0; i < adds->count; i++)
			cblas_dspr(CblasColMajor, CblasLower, p, -1.0, adds->x + (Size) i * p, 1, m->state.gram);
	}
	pfree(weights);
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
