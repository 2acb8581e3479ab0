/*-------------------------------------------------------------------------
 *
 * metrics.c
 *	  Held-out metrics of predictions: classification (accuracy, log-loss,
 *	  ROC AUC, precision, recall, F1, confusion matrix) and regression (R²,
 *	  RMSE, MAE).  Pure arithmetic over arrays: no SPI, no I/O.
 *
 * Definitions follow scikit-learn's sklearn.metrics, so that the two agree
 * to rounding (test/python/check_metrics.py):
 *	- log-loss clips each probability to [eps, 1 - eps] (eps = DBL_EPSILON)
 *	  and renormalises the row before -log p(true class);
 *	- ROC AUC is the Mann-Whitney statistic with tied scores counted half,
 *	  which equals the area under the trapezoidal ROC curve; one-vs-rest
 *	  macro average for more than two classes; undefined (NaN) when a class
 *	  has no positive or no negative row;
 *	- precision, recall and F1 are 0 where their denominator is 0.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

static const double *sorting_scores;
static int	sorting_stride;

static int
compare_by_score(const void *a, const void *b)
{
	double		x = sorting_scores[(Size) (*(const int64 *) a) * sorting_stride];
	double		y = sorting_scores[(Size) (*(const int64 *) b) * sorting_stride];

	if (isnan(x) || isnan(y))
		return (int) isnan(x) - (int) isnan(y);	/* NaN last, all equal */
	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * ROC AUC of scores score[i * stride] for rows whose truth[i] == positive.
 * O(n log n).  NaN without both a positive and a negative row.
 */
static double
roc_auc(const double *score, int stride, const int *truth, int positive, int64 n,
		int64 *order)
{
	double		rank_sum = 0.0;
	int64		positives = 0;
	int64		i,
				j;

	for (i = 0; i < n; i++)
		order[i] = i;
	sorting_scores = score;
	sorting_stride = stride;
	qsort(order, n, sizeof(int64), compare_by_score);
	for (i = 0; i < n; i = j)
	{
		double		mid_rank;
		int64		tied_positives = 0;

		/* a run of equal scores shares the mean of its ranks (1-based) */
		tied_positives = truth[order[i]] == positive;
		for (j = i + 1; j < n && compare_by_score(&order[j], &order[i]) == 0; j++)
			tied_positives += truth[order[j]] == positive;
		mid_rank = (double) (i + 1 + j) / 2.0;
		rank_sum += mid_rank * tied_positives;
		positives += tied_positives;
	}
	if (positives == 0 || positives == n)
		return NAN;
	return (rank_sum - (double) positives * (positives + 1) / 2.0) /
		((double) positives * (double) (n - positives));
}

/*
 * Metrics of a classifier over n rows: truth[i] is the true class index,
 * predicted[i] the predicted one (unlearn_predict_class's) and
 * proba[i * K + k] the probability of class k (rows summing to 1).  For
 * K = 2 the ROC AUC is that of class 1 (the positive class).  O(K n log n).
 */
void
classification_metrics(const int *truth, const int *predicted, const double *proba,
					   int64 n, int K, ClassificationMetrics *out)
{
	int64	   *order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * Max(n, 1));
	double		log_loss = 0.0;
	int64		correct = 0;
	double		auc_sum = 0.0;
	int			k;
	int64		i;

	out->confusion = palloc0(sizeof(int64) * K * K);
	out->precision = palloc(sizeof(double) * K);
	out->recall = palloc(sizeof(double) * K);
	out->f1 = palloc(sizeof(double) * K);
	for (i = 0; i < n; i++)
	{
		const double *row = proba + (Size) i * K;
		double		total = 0.0;

		for (k = 0; k < K; k++)
			total += Min(Max(row[k], DBL_EPSILON), 1.0 - DBL_EPSILON);
		log_loss -= log(Min(Max(row[truth[i]], DBL_EPSILON), 1.0 - DBL_EPSILON) / total);
		out->confusion[(Size) truth[i] * K + predicted[i]]++;
		correct += predicted[i] == truth[i];
	}
	out->accuracy = n > 0 ? (double) correct / n : NAN;
	out->log_loss = n > 0 ? log_loss / n : NAN;

	out->macro_f1 = 0.0;
	for (k = 0; k < K; k++)
	{
		int64		tp = out->confusion[(Size) k * K + k];
		int64		predicted = 0,
					actual = 0;
		int			j;

		for (j = 0; j < K; j++)
		{
			predicted += out->confusion[(Size) j * K + k];
			actual += out->confusion[(Size) k * K + j];
		}
		out->precision[k] = predicted > 0 ? (double) tp / predicted : 0.0;
		out->recall[k] = actual > 0 ? (double) tp / actual : 0.0;
		out->f1[k] = predicted + actual > 0 ? 2.0 * tp / (double) (predicted + actual) : 0.0;
		out->macro_f1 += out->f1[k] / K;
	}

	if (K == 2)
		out->roc_auc = roc_auc(proba + 1, K, truth, 1, n, order);
	else
	{
		for (k = 0; k < K; k++)
			auc_sum += roc_auc(proba + k, K, truth, k, n, order);
		out->roc_auc = auc_sum / K;
	}
	pfree(order);
}

/*
 * R², RMSE and MAE of predictions pred[i] of targets y[i].  R² is NaN
 * when the targets are constant.  Two passes, O(n).
 */
void
regression_metrics(const double *y, const double *pred, int64 n, RegressionMetrics *out)
{
	double		mean = 0.0;
	double		total = 0.0,
				residual = 0.0,
				absolute = 0.0;
	int64		i;

	for (i = 0; i < n; i++)
		mean += y[i];
	mean = n > 0 ? mean / n : NAN;
	for (i = 0; i < n; i++)
	{
		double		e = y[i] - pred[i];

		total += (y[i] - mean) * (y[i] - mean);
		residual += e * e;
		absolute += fabs(e);
	}
	out->r2 = total > 0.0 ? 1.0 - residual / total : NAN;
	out->rmse = n > 0 ? sqrt(residual / n) : NAN;
	out->mae = n > 0 ? absolute / n : NAN;
}
