/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  The residual budget eps' of Gaussian objective noise, and the noise
 *	  (laplace_noise.c has the pure-epsilon kind).
 *
 * Removal is (epsilon, delta)-certified while the released model's
 * gradient residual satisfies ||u|| <= eps' (Theorem 3).  For b ~ N(0,
 * sigma^2 I) the paper calibrates eps' = sigma epsilon / sqrt(2 ln(1.5 /
 * delta)).  We use the analytic Gaussian mechanism (Balle and Wang, ICML
 * 2018, Theorem 8) instead: eps' is the largest sensitivity r with
 *
 *	 Phi(r / (2 sigma) - epsilon sigma / r)
 *	   - e^epsilon Phi(-r / (2 sigma) - epsilon sigma / r) <= delta,
 *
 * which holds for every epsilon (the classic calibration only for
 * epsilon < 1) and gives 1.38 times more budget at epsilon = 1, delta =
 * 1e-4 (certified-removal.md §3).  The left side increases with r, so we
 * bisect on r / sigma.
 *
 * One-vs-rest models are one model in R^{pK} with one Gaussian noise
 * vector, so the budget applies to the l2 norm of the per-class spends,
 * sqrt(sum_k beta_k^2), not to their sum (certified-removal.md §3).
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>

#include <math.h>

#include "port.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(unlearn_budget);

/* privacy loss tail of the Gaussian mechanism at ratio r = eps'/sigma */
static double
gaussian_tail(double r, double epsilon)
{
	return normal_cdf(r / 2.0 - epsilon / r)
		- exp(epsilon) * normal_cdf(-r / 2.0 - epsilon / r);
}

double
gaussian_budget(double sigma, double epsilon, double delta)
{
	double		lo = 0.0,
				hi = 1.0;
	int			i;

	if (sigma <= 0.0)
		return 0.0;
	/* grow the bracket until the tail exceeds delta */
	while (gaussian_tail(hi, epsilon) <= delta && hi < 1e12)
		hi *= 2.0;
	for (i = 0; i < 200; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (gaussian_tail(mid, epsilon) <= delta)
			lo = mid;
		else
			hi = mid;
	}
	/* lo satisfies the inequality: never round the budget up */
	return lo * sigma;
}

/*
 * The budget of noise 'laplace' (laplace_noise.c), density ~ exp(-||b|| /
 * scale): Theorem 3 i certifies epsilon for a residual of at most
 * epsilon scale.
 */
double
laplace_budget(double scale, double epsilon)
{
	return scale * epsilon;
}

/*
 * b ~ N(0, sigma^2 I_n) from pg_strong_random (Box-Muller on 53-bit
 * uniforms in (0, 1]), reading its random bits NOISE_PAIRS pairs at a time
 * (a Noisy-GD step draws p numbers, a training thousands of times).
 */
#define NOISE_PAIRS 64

void
draw_gaussian_noise(double *b, int n, double sigma)
{
	uint64		bits[2 * NOISE_PAIRS];
	int			i;

	for (i = 0; i < n; i += 2)
	{
		int			pair = (i / 2) % NOISE_PAIRS;
		double		u1,
					u2,
					radius;

		if (pair == 0 &&
			!pg_strong_random(bits, sizeof(uint64) * 2 * Min(NOISE_PAIRS, (n - i + 1) / 2)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random noise")));
		u1 = ((double) (bits[2 * pair] >> 11) + 1.0) / 9007199254740992.0;
		u2 = (double) (bits[2 * pair + 1] >> 11) / 9007199254740992.0;
		radius = sqrt(-2.0 * log(u1));
		b[i] = sigma * radius * cos(2.0 * M_PI * u2);
		if (i + 1 < n)
			b[i + 1] = sigma * radius * sin(2.0 * M_PI * u2);
	}
}

double
combine_class_spent(const double *class_spent, int k)
{
	double		s = 0.0;
	int			i;

	for (i = 0; i < k; i++)
		s += class_spent[i] * class_spent[i];
	return sqrt(s);
}

Datum
unlearn_budget(PG_FUNCTION_ARGS)
{
	double		sigma = PG_GETARG_FLOAT8(0);
	double		epsilon = PG_GETARG_FLOAT8(1);
	double		delta = PG_GETARG_FLOAT8(2);

	if (!(sigma >= 0.0) || isinf(sigma))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sigma must be a finite number >= 0")));
	if (!(epsilon > 0.0) || isinf(epsilon))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be a finite number > 0")));
	if (!(delta > 0.0 && delta < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be between 0 and 1, exclusive")));
	/* noise 'laplace' (laplace_noise.c): pure epsilon, delta unused */
	if (PG_NARGS() > 3)
	{
		char	   *noise = text_to_cstring(PG_GETARG_TEXT_PP(3));

		if (strcmp(noise, "laplace") == 0)
			PG_RETURN_FLOAT8(laplace_budget(sigma, epsilon));
		if (strcmp(noise, "gaussian") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("noise must be \"gaussian\" or \"laplace\""),
					 errhint("gaussian gives (epsilon, delta)-certified removal, laplace pure epsilon.")));
	}
	PG_RETURN_FLOAT8(gaussian_budget(sigma, epsilon, delta));
}

/*
 * The rounding allowance of a gradient summed over n terms in R^p whose
 * magnitudes (sum |l'_i| ||x_i|| + the regulariser's and the noise's
 * norms) add up to magnitude: 2 (n + p) eps magnitude, a bound on the
 * floating-point error of any summation order.
 */
double
rounding_allowance(int64 n, int p, double magnitude)
{
	return 2.0 * (n + p) * DBL_EPSILON * magnitude;
}
