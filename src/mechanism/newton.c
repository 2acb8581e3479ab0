/*-------------------------------------------------------------------------
 *
 * newton.c
 *	  The Newton mechanism (Guo et al., logistic loss): the Newton update of
 *	  step.c with the per-step residual bounds of certified-removal.md §4,
 *	  spent against the budget eps' that the noise b certifies.  It stores
 *	  w, b, the anchor w0, the factor of H, C per class, and K' for guo.
 *	  Maths only: the passes over the table that a re-anchoring, a retrain
 *	  or the exact bound need are exec/maintain.c's.
 *
 * H is the stale Hessian built at the anchor w0 (step.c), so with t_i =
 * x_i.v, the new residual is u_prev + R + (H_w - H)v + (Hv - Delta)
 * (§4.2), R = sum_i r_i x_i the Taylor
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
#include "mechanism/mechanism.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

/*
 * u'(H - Lambda I)u = ||L'u||^2 - Lambda ||u||^2 for the factor L of H,
 * rounded up; work is a p-vector.
 */
static double
factor_data_quadratic(UnlearnModel *m, const double *lfac, const double *u, double *work)
{
	int			p = m->def.p;
	double		unorm2 = vec_dot(u, u, p);

	memcpy(work, u, sizeof(double) * p);
	packed_lower_transpose_product(lfac, p, work);
	return Max(vec_dot(work, work, p) * (1.0 + 4.0 * p * DBL_EPSILON) -
			   m->def.reg * unorm2 * (1.0 - 4.0 * p * DBL_EPSILON), 0.0);
}

/*
 * The bound of class k's step, guo or taylor (see the header); 0 for the
 * exact bound, which exec/maintain.c measures over the rows once per
 * statement.  Keeps the drift product K'(w - w0) in step with w (guo).
 */
static double
newton_step_bound(UnlearnModel *m, StepCache *cache, const StepBoundInput *in)
{
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double		gamma = loss_gamma(m->def.loss);
	double		gamma_p = in->gamma_p;
	int			k = in->k;
	double	   *w = in->w;
	const double *w0 = in->w0;
	const double *v = in->v;
	double	   *delta = in->work;
	double	   *kv = in->work2;
	const StepRows *adds = in->adds;
	const double *lfac = m->state.factor + packed * k;
	double	   *drift_prod = cache->drift_prod ? cache->drift_prod + (Size) k * p : NULL;
	double		v_norm = vec_norm(v, p);
	double		solve_error;
	double		bound = 0.0;

	if (m->def.bound == BOUND_EXACT)
		return 0.0;
	/*
	 * ||L L' v - Delta|| for v from two triangular solves: each is
	 * backward stable with |dL| <= gamma_p |L| (Higham, Thm 8.5),
	 * so the error is at most (2 gamma_p + gamma_p^2) ||L||_F^2 ||v||.
	 */
	solve_error = (2.0 * gamma_p + gamma_p * gamma_p) * cache->factor_norm2[k] * v_norm;

	if (m->def.bound == BOUND_GUO)
	{
		double		quad,
					drift_quad = 0.0;
		int			j;

		quad = Max(packed_quadratic(m->state.gram, p, v, kv), 0.0);	/* ||X'v||^2 */
		for (j = 0; j < p; j++)
			drift_quad += (w[j] - w0[j]) * drift_prod[j];	/* ||X'(w-w0)||^2 */
		drift_quad = Max(drift_quad, 0.0);
		bound = gamma * sqrt(m->state.gram_bound) * v_norm * sqrt(quad)
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
		weight = Max(m->state.weight_sum[k], 0.0) * (1.0 + 2.0 * (m->released.rows + adds->count + p) * DBL_EPSILON);

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
	bound += rounding_allowance(m->released.rows + adds->count, p,
								m->released.rows + adds->count + m->def.reg * vec_norm(w, p));
	return bound;
}

/* the Newton mechanism's limit: eps' */
static double
newton_limit(UnlearnModel *m)
{
	return m->def.budget;
}

static bool
newton_apply(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *statement_bound)
{
	return newton_update(m, rems, adds, statement_bound, newton_step_bound);
}

static bool
newton_erase(UnlearnModel *m, const CohortStats *cs, double *statement_bound)
{
	return cohort_erase(m, cs, statement_bound, newton_step_bound);
}

const Mechanism newton_mechanism = {
	.name = "newton",
	.limit = newton_limit,
	.apply = newton_apply,
	.erase = newton_erase,
	.tpr_ceiling = removal_ceiling,
	.margin_variance = newton_margin_variance,
};
