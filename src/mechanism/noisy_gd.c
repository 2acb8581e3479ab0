/*-------------------------------------------------------------------------
 *
 * noisy_gd.c
 *	  The Noisy-GD mechanism (seed 002, Def. 5.1): training is Noisy-GD
 *	  from the stationary start, and every change of S rows runs K(S)
 *	  noisy steps on the rows after it, from the released weights.  It
 *	  keeps nothing but w and public figures (the parameters, the steps
 *	  run, the fewest rows since training), so two releases tell an
 *	  observer no more than the accountant says, and requests may depend
 *	  on what was released (Thm 4.3).
 *
 * Parameters, from epsilon, delta, lambda and the n rows of a training
 * (math/renyi.c has the symbols):
 *	eta = 1 / (1/4 + lambda), the largest step the smoothness allows;
 *	sigma, the least noise whose training DP (one row) is within epsilon
 *	over 1% fewer rows than n (ROW_HEADROOM);
 *	the training steps, enough for (1 - eta lambda)^K <= 1e-6: noise
 *	aside, descent from the start is then within 1e-6 of the optimum's
 *	distance (utility only: the DP holds for any number of steps).
 * Each of them may be given instead (given_parameters), and is then
 * kept by every training.  The budget is epsilon: every change must reach
 * the deletion guarantee epsilon at delta for the rows it changed, over
 * the fewest rows since training (eps0 grows as rows leave).  spent is the
 * largest deletion epsilon of any change since the model was created.
 *
 * Cost: K(S) passes of O(n p) over the rows after a change, at most a
 * training's steps (NOISY_GD_MAX_TRAINING_STEPS); K(1) = 0 until 1% of
 * the rows trained on have left.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <math.h>

#define TRAINING_CONTRACTION 1e-6
/*
 * sigma covers the training DP for this share fewer rows than trained on,
 * so that single-row changes run no step until as many rows have left
 */
#define ROW_HEADROOM 0.01

/* eta's bound: the inverse smoothness of f, 1 / (1/4 + lambda) */
double
noisy_gd_largest_step(double lambda)
{
	return 1.0 / (0.25 + lambda);
}

static void
parameters_of(const UnlearnModel *m, NoisyGdParameters *gd)
{
	gd->lambda = m->def.lambda;
	gd->step_size = m->def.step_size;
	gd->noise = m->def.sigma;
}

/*
 * Choose eta, sigma and the training steps for n rows, each unless
 * unlearn_train was given it (given_parameters); budget = epsilon.  A
 * step size beyond 1 / (1/4 + lambda) is refused (the accountant's bound
 * would not hold), and so are an epsilon no noise reaches, a given noise
 * whose training DP for one row passes epsilon and more than
 * NOISY_GD_MAX_TRAINING_STEPS steps, except in a retraining caused by a
 * write, which never fails for a model: the model then keeps its noise
 * (unlearn_privacy reports the DP epsilon it has) and runs at most that
 * many steps.
 */
void
noisy_gd_choose(UnlearnModel *m, int64 n)
{
	bool		by_write = OidIsValid(m->call.changed_by);
	double		largest_step = noisy_gd_largest_step(m->def.lambda);
	double		least_noise = renyi_noise_for(m->def.lambda, floor((1.0 - ROW_HEADROOM) * (double) n),
											  m->def.epsilon, m->def.delta);
	double		steps;

	if (!(m->def.given_parameters & GIVEN_STEP_SIZE))
		m->def.step_size = largest_step;
	else if (m->def.step_size > largest_step)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("step_size %g of model \"%s\" is above 1 / (1/4 + lambda) = %g",
						m->def.step_size, m->def.name, largest_step),
				 errdetail("Noisy-GD's contraction, and so its deletion guarantee, needs a step of at most the inverse smoothness."),
				 errhint("Pass a step_size of at most %g, or leave it out.", largest_step)));
	if (isnan(least_noise) && !by_write)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon %g is out of reach at delta %g for model \"%s\"",
						m->def.epsilon, m->def.delta, m->def.name),
				 errdetail("Converting Renyi DP to (epsilon, delta) costs more than epsilon at every order, whatever the noise up to %g.",
						   RENYI_MOST_NOISE),
				 errhint("Use a larger epsilon or delta.")));
	if (!(m->def.given_parameters & GIVEN_NOISE))
	{
		/* a training caused by a write keeps its noise if none reaches epsilon */
		if (!isnan(least_noise))
			m->def.sigma = least_noise;
	}
	else if (noisy_gd_training_epsilon(m, n) > m->def.epsilon && !by_write)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("noise %g of model \"%s\" gives its %lld rows a DP epsilon of %g, above epsilon %g",
						m->def.sigma, m->def.name, (long long) n, noisy_gd_training_epsilon(m, n),
						m->def.epsilon),
				 errhint("Pass a noise of at least %g, a larger epsilon, or leave noise out.",
						 renyi_noise_for(m->def.lambda, (double) n, m->def.epsilon, m->def.delta))));
	if (!(m->def.given_parameters & GIVEN_TRAINING_STEPS))
	{
		steps = ceil(log(1.0 / TRAINING_CONTRACTION) /
					 -log1p(-Min(m->def.step_size * m->def.lambda, 0.5)));
		if (!(steps <= (double) NOISY_GD_MAX_TRAINING_STEPS))
		{
			if (!by_write)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("model \"%s\" would need %.0f steps to train, more than %lld",
								m->def.name, steps, (long long) NOISY_GD_MAX_TRAINING_STEPS),
						 errdetail("A training's descent contracts by 1 - step_size * lambda = %.12g per step.",
								   1.0 - m->def.step_size * m->def.lambda),
						 errhint("Use a larger lambda (or step_size), or pass training_steps.")));
			steps = (double) NOISY_GD_MAX_TRAINING_STEPS;
		}
		m->def.training_steps = (int64) steps;
	}
	m->def.budget = m->def.epsilon;
}

/*
 * K(S) for a change of rows_changed rows: the steps after which those rows
 * have the deletion guarantee budget at delta, over the fewest rows since
 * training; -1 if no number of steps reaches it.
 */
int64
noisy_gd_change_steps(const UnlearnModel *m, int64 rows_changed)
{
	NoisyGdParameters gd;

	parameters_of(m, &gd);
	return renyi_steps_needed(&gd, (double) m->released.fewest_rows, (double) rows_changed,
							  m->def.budget, m->def.delta);
}

/* the deletion epsilon of rows_changed rows after steps steps */
double
noisy_gd_change_epsilon(const UnlearnModel *m, int64 rows_changed, int64 steps)
{
	NoisyGdParameters gd;

	parameters_of(m, &gd);
	return renyi_epsilon(&gd, (double) m->released.fewest_rows, (double) rows_changed,
						 (double) steps, m->def.delta, NULL);
}

/* the DP epsilon of one row of n, with m's parameters */
double
noisy_gd_training_epsilon(const UnlearnModel *m, int64 n)
{
	NoisyGdParameters gd;

	parameters_of(m, &gd);
	return renyi_epsilon(&gd, (double) n, 1.0, 0.0, m->def.delta, NULL);
}

/* the DP epsilon of one row present, over the fewest rows since training */
double
noisy_gd_dp_epsilon(const UnlearnModel *m)
{
	return noisy_gd_change_epsilon(m, 1, 0);
}

/*
 * steps steps of m's Noisy-GD over n rows, whose gradient sums come from
 * gradient, from w, or from the stationary start N(0, sigma^2 / lambda I)
 * drawn by draw when from_start; w (p) receives the result.
 */
void
noisy_gd_release(const UnlearnModel *m, int64 n, GradientOracle gradient, void *gradient_arg,
				 int64 steps, bool from_start, NoiseSource draw, void *draw_arg, double *w)
{
	int			p = m->def.p;
	NoisyGdParameters gd;

	parameters_of(m, &gd);
	if (from_start)
	{
		int			j;

		draw(draw_arg, w, p);
		for (j = 0; j < p; j++)
			w[j] *= gd.noise / sqrt(gd.lambda);
	}
	noisy_gd_steps(&gd, (double) n, p, gradient, gradient_arg, w, steps, draw, draw_arg);
}

/*
 * A release's spread along x, v = H^-1 x with H the Hessian of the sum
 * form at the optimum: Noisy-GD samples about the Gibbs distribution
 * exp(-f / sigma^2), whose covariance is about sigma^2 (f'')^-1 =
 * sigma^2 n H^-1, so the variance of x'w is sigma^2 n x'v.
 */
static double
noisy_gd_margin_variance(const UnlearnModel *m, const double *x, const double *v)
{
	return m->def.sigma * m->def.sigma * (double) m->released.rows * vec_dot(x, v, m->def.p);
}

/* the budget rule does not apply: every change reaches the budget by its steps */
static double
noisy_gd_limit(UnlearnModel *m)
{
	return m->def.budget;
}

/*
 * (eps, delta)-indistinguishability bounds a test's power at false
 * positive rate fpr by e^eps fpr + delta, with eps the deletion epsilon
 * every change reaches.
 */
static double
noisy_gd_tpr_ceiling(const UnlearnModel *m, double fpr)
{
	return Min(1.0, exp(m->def.budget) * fpr + m->def.delta);
}

const Mechanism noisy_gd_mechanism = {
	.name = "noisy_gd",
	.limit = noisy_gd_limit,
	.apply = NULL,				/* changes run noisy_gd_release on the rows */
	.tpr_ceiling = noisy_gd_tpr_ceiling,
	.margin_variance = noisy_gd_margin_variance,
};
