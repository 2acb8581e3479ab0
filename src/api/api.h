/*-------------------------------------------------------------------------
 *
 * api.h
 *	  The api layer: the SQL-callable functions of the extension's
 *	  interface, thin over the exec layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_API_H
#define UNLEARN_API_H

#include "exec/exec.h"

/* predict.c: what prediction needs of a released model */
typedef struct PredictModel
{
	char	   *name;
	UnlearnLoss loss;
	int			dims;
	int			p;
	int			nclasses;
	int			nlabels;
	RowMap		map;
	double	   *coef;
	char	  **classes;
	double	   *row;			/* scratch, p */
	double	   *proba;			/* scratch, one per label */
	UnlearnModel *columns;		/* the model's columns, for decode_model_row */
} PredictModel;
extern PredictModel *load_predict_model(const char *name, MemoryContext cxt);
extern double score_row(PredictModel *pm, int *best);
extern int	class_probabilities(PredictModel *pm);
extern void require_classifier(PredictModel *pm, const char *function);
extern UnlearnModel *model_on_relation(PredictModel *pm, FunctionCallInfo fcinfo, int argno,
									   bool with_label, Oid *relid);
/* verify.c */
extern double exact_residual(UnlearnModel *m, const DesignMatrix *dm, double *u_out);
extern double model_accuracy(UnlearnModel *m, const DesignMatrix *dm, const double *w);
extern UnlearnModel *load_owned_model(text *name, Oid caller);
extern void load_release_state(UnlearnModel *m);

#endif							/* UNLEARN_API_H */
