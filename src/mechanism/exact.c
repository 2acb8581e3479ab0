/*-------------------------------------------------------------------------
 *
 * exact.c
 *	  The exact mechanism (least squares): the Newton update of step.c is
 *	  the exact minimiser's change, since the squared loss's Hessian does
 *	  not depend on w (gamma = 0), so a step spends only its rounding.  It
 *	  stores what the Newton mechanism stores, with K' never.  Its limit is
 *	  eps' when the noise certifies something (sigma > 0), and otherwise a
 *	  precision limit, so that a model without noise stays a refit.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <float.h>
#include <math.h>

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
exact_step_bound(UnlearnModel *m, StepCache *cache, const StepBoundInput *in)
{
	int			k = in->k;
	const StepRows *rems = in->rems;
	const StepRows *adds = in->adds;
	int			rem_from = in->rem_from,
				rem_count = in->rem_count,
				add_from = in->add_from,
				add_count = in->add_count;
	const double *w = in->w;
	const double *v = in->v;
	double		gamma_p = in->gamma_p;
	int			p = m->def.p;
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

	for (k = 0; k < m->released.nclasses; k++)
	{
		double		size = m->def.reg * vec_norm(m->released.coef + (Size) k * m->def.p, m->def.p) +
			vec_norm(m->state.noise + (Size) k * m->def.p, m->def.p);

		sum += size * size;
	}
	return SQUARED_PRECISION * sqrt(sum);
}

/* eps' with noise; without, the precision limit */
static double
exact_limit(UnlearnModel *m)
{
	return m->def.budget == 0.0 ? squared_precision_limit(m) : m->def.budget;
}

static bool
exact_apply(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *statement_bound)
{
	return newton_update(m, rems, adds, statement_bound, exact_step_bound);
}

static bool
exact_erase(UnlearnModel *m, const CohortStats *cs, double *statement_bound)
{
	return cohort_erase(m, cs, statement_bound, exact_step_bound);
}

const Mechanism exact_mechanism = {
	.name = "exact",
	.limit = exact_limit,
	.apply = exact_apply,
	.erase = exact_erase,
	.tpr_ceiling = removal_ceiling,
	.margin_variance = newton_margin_variance,
};
