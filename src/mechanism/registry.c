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

#include <math.h>

/* the mechanism that keeps m: least squares forgets exactly */
const Mechanism *
mechanism_for(const UnlearnModel *m)
{
	if (m->def.mechanism == MECHANISM_NOISY_GD)
		return &noisy_gd_mechanism;
	if (m->def.loss == LOSS_SQUARED)
		return &exact_mechanism;
	if (m->def.mechanism == MECHANISM_FISHER)
		return &fisher_mechanism;
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
 * TPR <= Phi(Phi^-1(fpr) + eps' / sigma).  For noise 'laplace' the
 * removal is pure epsilon-certified: TPR <= min(e^eps fpr, 1 - e^-eps (1
 * - fpr)).  Without noise nothing is bounded.
 */
double
removal_ceiling(const UnlearnModel *m, double fpr)
{
	if (m->def.sigma <= 0.0 || m->def.budget <= 0.0)
		return 1.0;
	if (m->def.noise == NOISE_LAPLACE)
		return Min(1.0, Min(exp(m->def.epsilon) * fpr, 1.0 - exp(-m->def.epsilon) * (1.0 - fpr)));
	return normal_cdf(normal_quantile(fpr) + m->def.budget / m->def.sigma);
}

double
audit_tpr_ceiling(const UnlearnModel *m, double fpr)
{
	return mechanism_for(m)->tpr_ceiling(m, fpr);
}

/*
 * A loss-perturbed release minimises L(w) + b'w: w - w* is about -H^-1 b,
 * so x'w has variance ||H^-1 x||^2 times that of a coordinate of b:
 * sigma^2 for the Gaussian, E||b||^2 / n = sigma^2 (n + 1) for noise
 * 'laplace' in R^n, n = pK (||b|| ~ Gamma(n, sigma)).
 */
double
newton_margin_variance(const UnlearnModel *m, const double *x, const double *v)
{
	double		coordinate = m->def.sigma * m->def.sigma;

	if (m->def.noise == NOISE_LAPLACE)
		coordinate *= (double) m->def.p * m->released.nclasses + 1.0;
	return coordinate * vec_dot(v, v, m->def.p);
}

/* eps' of the objective noise b at (epsilon, delta) */
double
objective_budget(const UnlearnModel *m)
{
	if (m->def.mechanism == MECHANISM_FISHER)
		return m->def.loss == LOSS_SQUARED ? 0.0 : fisher_budget(m->def.reg, m->def.nats);
	if (m->def.noise == NOISE_LAPLACE)
		return laplace_budget(m->def.sigma, m->def.epsilon);
	return gaussian_budget(m->def.sigma, m->def.epsilon, m->def.delta);
}

/*
 * Draw b afresh for a (re)training: N(0, sigma^2 I) or, for 'laplace',
 * one vector of R^{pK} (the one-vs-rest classes are one model) with
 * density ~ exp(-||b|| / sigma); 0 for fisher, which trains without.
 */
void
draw_objective_noise(UnlearnModel *m)
{
	int			n = m->released.nclasses * m->def.p;

	if (m->def.mechanism == MECHANISM_FISHER || m->def.sigma == 0.0)
		memset(m->state.noise, 0, sizeof(double) * n);
	else if (m->def.noise == NOISE_LAPLACE)
		draw_laplace_noise(m->state.noise, n, m->def.sigma);
	else
		draw_gaussian_noise(m->state.noise, n, m->def.sigma);
}

/*
 * Fill m->released.published with the weights to store for the current w:
 * w itself, or for a mechanism with a release, w + z with fresh noise
 * when w or the rows moved since the state was loaded (a rebuild of the
 * matrices publishes nothing new).  m->call.release_nats is the KL bound
 * of a new release (0 after a training, which reads only the rows it
 * keeps), or -1.
 */
void
release_weights(UnlearnModel *m)
{
	const Mechanism *mech = mechanism_for(m);
	Size		n = (Size) m->released.nclasses * m->def.p;
	bool		moved;

	m->call.release_nats = -1.0;
	/* loaded without its state, coef is what the model published */
	if (mech->release == NULL || m->released.status != MODEL_READY ||
		(m->state.anchor == NULL && !m->call.retrained_now))
	{
		m->released.published = m->released.coef;
		return;
	}
	moved = m->call.retrained_now || m->state.weights == NULL ||
		m->released.published == NULL || m->released.published == m->released.coef ||
		memcmp(m->state.weights, m->released.coef, sizeof(double) * n) != 0 ||
		m->released.removed + m->released.inserted != m->state.release_changes;
	if (!moved)
		return;
	/* a w that moved is never published without its noise */
	if (m->state.factor == NULL || m->state.class_spent == NULL)
		elog(ERROR, "model \"%s\" moved its weights without its removal state", m->def.name);
	if (m->released.published == NULL || m->released.published == m->released.coef)
		m->released.published = palloc(sizeof(double) * n);
	m->call.release_nats = mech->release(m, m->released.published);
	if (m->call.retrained_now)
		m->call.release_nats = 0.0;
	m->released.nats_spent += m->call.release_nats;
}
