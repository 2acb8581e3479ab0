/*-------------------------------------------------------------------------
 *
 * fisher.c
 *	  Fisher scrubbing (Golatkar, "Unlearning and Privacy in Deep Neural
 *	  Networks", ch. 2, Eq. 2.8) for a model trained without objective
 *	  noise (b = 0): each change takes the Newton step of newton.c from the
 *	  cached Hessian and the changed rows alone, keeps the result w secret,
 *	  and publishes w + z with fresh Gaussian noise z ~ N(0, c H^-1) shaped
 *	  by the factor of H.  Each release states a bound kappa, in nats, on
 *	  the KL divergence between what it publishes and the exact minimiser of
 *	  the rows left with the same noise: what the release leaves about the
 *	  rows forgotten so far.  Least squares takes the exact mechanism:
 *	  w is the refit, nothing to hide, 0 nats.
 *
 * The bound.  Let w* minimise L on the rows left (Lambda-strongly convex),
 * g = grad L(w) its residual at the secret w, ||g|| <= beta (the spent
 * budget of newton.c's bound), and H = L L' the stale Hessian at the
 * anchor w0 on those rows.  The noise covariance is Sigma = c (L L')^-1, so
 *
 *	 KL(N(w, Sigma) || N(w*, Sigma)) = (w - w*)' L L' (w - w*) / (2 c).
 *
 * By the mean value theorem w - w* = Hbar^-1 g with Hbar the mean Hessian
 * on the segment [w*, w], whose points lie within delta = ||w - w0|| +
 * beta / Lambda of w0 (||w - w*|| <= ||g|| / Lambda).  The logistic loss
 * has |l'''| <= l'', so l''(z + s) >= e^-|s| l''(z), and with ||x_i|| <= 1
 * Hbar >= e^-delta H_exact, H_exact the Hessian the factor stands for.
 * With ||L L' - H_exact|| <= e_f, L L' <= (1 + e_f / Lambda) H_exact, so
 *
 *	 (w - w*)' L L' (w - w*) <= (1 + e_f / Lambda) e^(2 delta) g' H_exact^-1 g
 *							  <= (1 + e_f / Lambda) e^(2 delta) beta^2 / Lambda,
 *
 * summed over the classes of a one-vs-rest model (independent noise).  c
 * is chosen so that the sum is the model's nats.  e_f allows 4 (p + 2) eps
 * ||L||_F^2 for the factorisation and for each row change since the
 * training (the backward error of a Cholesky factorisation or of a
 * rank-one modification, Higham ch. 10).
 *
 * Why H^-1 rather than the H^-1/2 of Eq. 2.8: under this bound the noise
 * c H^-1/2 needs c' = e^(2 delta) beta^2 / (2 Lambda^(3/2) nats), so along
 * an eigenvector of H of eigenvalue h the margin's noise variance is
 * sqrt(h / Lambda) >= 1 times that of c H^-1: H^-1 is never worse, and it
 * is one triangular solve with the cached factor (O(p^2)) where H^-1/2
 * needs an eigendecomposition (O(p^3)) per release.
 *
 * Releases compose: the noise of each is fresh and w does not depend on
 * it, so the KL of all the releases after a row left is the sum of their
 * kappa, which unlearn.models.nats_spent adds up.  A training reads only
 * the rows it keeps and adds nothing.
 *
 * Its limit keeps the release's noise on a margin (||x|| <= 1) within
 * FISHER_MARGIN_NOISE standard deviations: beta e^delta <= 0.1 Lambda
 * sqrt(2 nats); past it the budget rule re-anchors.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <float.h>
#include <math.h>

/* the largest standard deviation of the release's noise on a margin */
#define FISHER_MARGIN_NOISE 0.1

/* the budget fisher models store: the beta at which the noise reaches that */
double
fisher_budget(double reg, double nats)
{
	return FISHER_MARGIN_NOISE * reg * sqrt(2.0 * nats);
}

/* ||w_k - w0_k||, rounded up */
static double
class_drift(const UnlearnModel *m, int k)
{
	int			p = m->def.p;
	const double *w = m->released.coef + (Size) k * p;
	const double *w0 = m->state.anchor + (Size) k * p;
	double		s = 0.0;
	int			j;

	for (j = 0; j < p; j++)
		s += (w[j] - w0[j]) * (w[j] - w0[j]);
	return sqrt(s) * (1.0 + p * DBL_EPSILON);
}

/* the largest ||w_k - w0_k||, or 0 without the state */
static double
largest_drift(const UnlearnModel *m)
{
	double		largest = 0.0;
	int			k;

	if (m->state.anchor == NULL)
		return 0.0;
	for (k = 0; k < m->released.nclasses; k++)
		largest = Max(largest, class_drift(m, k));
	return largest;
}

/* the budget, shrunk by e^-delta so that beta e^delta stays within it */
static double
fisher_limit(UnlearnModel *m)
{
	return m->def.budget * exp(-largest_drift(m));
}

/*
 * sum_k (1 + e_f / Lambda) e^(2 delta_k) beta_k^2 (see the header),
 * rounded up; +inf if it overflows.
 */
static double
scrub_sum(const UnlearnModel *m)
{
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double		reg = m->def.reg;
	double		sum = 0.0;
	int			k;

	for (k = 0; k < m->released.nclasses; k++)
	{
		const double *lfac = m->state.factor + packed * k;
		double		beta = m->state.class_spent[k];
		double		drift = class_drift(m, k) + beta / reg * (1.0 + 2.0 * DBL_EPSILON);
		double		frobenius2 = 0.0;
		double		factor_error;
		Size		i;
		for (i = 0; i < packed; i++)
			frobenius2 += lfac[i] * lfac[i];
		factor_error = 4.0 * (p + 2) * DBL_EPSILON *
			(double) (1 + m->released.removed + m->released.inserted) *
			frobenius2 * (1.0 + packed * DBL_EPSILON);
		sum += (1.0 + factor_error / reg) * exp(2.0 * drift) * beta * beta;
	}
	return sum * (1.0 + 8.0 * (m->released.nclasses + 4) * DBL_EPSILON);
}

/*
 * Publish w + z, z ~ N(0, c (L L')^-1) per class, with c chosen so that
 * the release's KL bound is the model's nats; returns that bound.  With
 * a residual bound of 0 nothing is hidden: z = 0, 0 nats.  If the bound
 * overflows, which the limit keeps from happening, nothing is published:
 * the weights are zeros, and 0 nats.
 */
static double
fisher_release(UnlearnModel *m, double *published)
{
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double		sum = scrub_sum(m);
	double		nats = m->def.nats;
	double		c;
	double		sd;
	int			k;

	if (sum == 0.0)
	{
		memcpy(published, m->released.coef, sizeof(double) * m->released.nclasses * p);
		m->state.release_scale = 0.0;
		return 0.0;
	}
	c = sum / (2.0 * m->def.reg * nats) * (1.0 + 32.0 * p * DBL_EPSILON);
	if (!isfinite(c))
	{
		memset(published, 0, sizeof(double) * m->released.nclasses * p);
		m->state.release_scale = 0.0;
		return 0.0;
	}
	sd = sqrt(c);
	for (k = 0; k < m->released.nclasses; k++)
	{
		double	   *z = published + (Size) k * p;
		int			j;

		draw_gaussian_noise(z, p, 1.0);
		packed_lower_transpose_solve(m->state.factor + packed * k, p, z);
		for (j = 0; j < p; j++)
			z[j] = m->released.coef[(Size) k * p + j] + sd * z[j];
	}
	m->state.release_scale = c;
	return sum / (2.0 * m->def.reg * c) * (1.0 + 16.0 * p * DBL_EPSILON);
}

/*
 * Two Gaussians of one covariance whose KL is kappa are sqrt(2 kappa)
 * apart in its metric: no test tells them apart better than TPR =
 * Phi(Phi^-1(fpr) + sqrt(2 kappa)), and each release's kappa is at most
 * nats.
 */
static double
fisher_tpr_ceiling(const UnlearnModel *m, double fpr)
{
	return normal_cdf(normal_quantile(fpr) + sqrt(2.0 * m->def.nats));
}

/* x'z with z ~ N(0, c H^-1), v = H^-1 x: variance c x'v */
static double
fisher_margin_variance(const UnlearnModel *m, const double *x, const double *v)
{
	return m->state.release_scale * Max(vec_dot(x, v, m->def.p), 0.0);
}

static bool
fisher_apply(UnlearnModel *m, const StepRows *rems, const StepRows *adds, double *statement_bound)
{
	return newton_mechanism.apply(m, rems, adds, statement_bound);
}

static bool
fisher_erase(UnlearnModel *m, const CohortStats *cs, double *statement_bound)
{
	return newton_mechanism.erase(m, cs, statement_bound);
}

const Mechanism fisher_mechanism = {
	.name = "fisher",
	.limit = fisher_limit,
	.apply = fisher_apply,
	.erase = fisher_erase,
	.release = fisher_release,
	.tpr_ceiling = fisher_tpr_ceiling,
	.margin_variance = fisher_margin_variance,
};
