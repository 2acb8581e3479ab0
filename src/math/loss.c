/*-------------------------------------------------------------------------
 *
 * loss.c
 *	  The per-row losses l(z, y) of the margin z = w.x and their derivatives.
 *
 * logistic, y in {-1, +1}: l = log(1 + exp(-y z)), l' = (sigma(yz) - 1) y,
 *	 l'' = sigma(yz)(1 - sigma(yz)).  gamma, the Lipschitz constant of l'',
 *	 is max |sigma(1 - sigma)(1 - 2 sigma)| = 1/(6 sqrt 3), reached where
 *	 sigma = 1/2 - 1/(2 sqrt 3) (certified-removal.md §1; the paper's 1/4 is
 *	 also valid but 2.6 times looser).
 * squared: l = (z - y)^2, l' = 2 (z - y), l'' = 2, gamma = 0, so the Newton
 *	 step is exact.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <math.h>

double
logistic_sigmoid(double z)
{
	if (z >= 0)
		return 1.0 / (1.0 + exp(-z));
	else
	{
		double		e = exp(z);

		return e / (1.0 + e);
	}
}

double
loss_value(UnlearnLoss loss, double z, double y)
{
	if (loss == LOSS_SQUARED)
		return (z - y) * (z - y);
	else
	{
		double		m = -y * z;

		/* log(1 + exp(m)) without overflow */
		return m > 0 ? m + log1p(exp(-m)) : log1p(exp(m));
	}
}

double
loss_d1(UnlearnLoss loss, double z, double y)
{
	if (loss == LOSS_SQUARED)
		return 2.0 * (z - y);
	return (logistic_sigmoid(y * z) - 1.0) * y;
}

double
loss_d2(UnlearnLoss loss, double z, double y)
{
	double		s;

	if (loss == LOSS_SQUARED)
		return 2.0;
	s = logistic_sigmoid(y * z);
	return s * (1.0 - s);
}

double
loss_gamma(UnlearnLoss loss)
{
	if (loss == LOSS_SQUARED)
		return 0.0;
	/* 1/(6 sqrt 3), rounded up in the last digit */
	return 0.096225044864937631;
}
