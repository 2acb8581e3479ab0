/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The mechanisms, and the budget rule of Algorithm 2 over whichever a
 *	  model has.  A new mechanism is one file defining a Mechanism (see
 *	  mechanism.h) and one line in mechanism_for.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

/* the mechanism that keeps m: least squares forgets exactly */
const Mechanism *
mechanism_for(const UnlearnModel *m)
{
	if (m->def.mechanism == MECHANISM_NOISY_GD)
		return &noisy_gd_mechanism;
	if (m->def.loss == LOSS_SQUARED)
		return &exact_mechanism;
	return &newton_mechanism;
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
	return mechanism_for(m)->limit(m);
}

/*
 * Does a model whose noise certifies something (sigma > 0) start beyond
 * its budget?  Its training residual alone passes eps': nothing it could
 * release is certified.
 */
bool
training_exceeds_budget(UnlearnModel *m)
{
	return m->def.budget > 0.0 && m->released.spent > budget_limit(m);
}

/* Would beta pass the budget? */
bool
budget_exceeded(UnlearnModel *m, const double *class_spent_after)
{
	return combine_class_spent(class_spent_after, m->released.nclasses) > budget_limit(m);
}

/*
 * The ceiling of a membership attack on a row this mechanism removed.  The
 * released w minimises the objective with noise b - u, where u is the
 * gradient residual and ||u|| <= spent <= eps' (the budget); the retrain
 * without the row minimises it with noise b.  Telling the two apart is a
 * test between Gaussians eps' / sigma apart:
 * TPR <= Phi(Phi^-1(fpr) + eps' / sigma).  Without noise nothing is bounded.
 */
double
removal_ceiling(const UnlearnModel *m, double fpr)
{
	if (m->def.sigma <= 0.0 || m->def.budget <= 0.0)
		return 1.0;
	return normal_cdf(normal_quantile(fpr) + m->def.budget / m->def.sigma);
}

double
audit_tpr_ceiling(const UnlearnModel *m, double fpr)
{
	return mechanism_for(m)->tpr_ceiling(m, fpr);
}

/*
 * A loss-perturbed release minimises L(w) + b'w, b ~ N(0, sigma^2 I):
 * w - w* is about -H^-1 b, so x'w has variance sigma^2 ||H^-1 x||^2.
 */
double
newton_margin_variance(const UnlearnModel *m, const double *x, const double *v)
{
	return m->def.sigma * m->def.sigma * vec_dot(v, v, m->def.p);
}
