/*-------------------------------------------------------------------------
 *
 * targets.c
 *	  A row's label as the target of the loss: its class among the model's
 *	  classes (one-vs-rest, or the positive class of a binary model), or
 *	  its value (least squares).
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <math.h>

/* the index of a label in a class list, or -1 */
int
class_position(char *const *classes, int nlabels, const char *label)
{
	int			k;

	for (k = 0; k < nlabels; k++)
		if (strcmp(classes[k], label) == 0)
			return k;
	return -1;
}

/*
 * Map a label (canonical text and value, rows.c) to its target.  Returns
 * the class index (binary: 1 for the positive class, 0 for the negative
 * one; one-vs-rest: k), or -1 for squared loss, where *y receives the
 * value.  Errors never echo the label.
 */
int
label_to_target(UnlearnModel *m, const char *label, double value, double *y)
{
	int			k;

	if (m->def.loss == LOSS_SQUARED)
	{
		if (!isfinite(value))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("label of model \"%s\" must be a finite number", m->def.name),
					 errhint("Remove or fix rows whose label \"%s\" is NaN or infinite.", m->def.label)));
		*y = value;
		return -1;
	}
	k = class_position(m->released.classes, m->released.nlabels, label);
	if (k >= 0)
	{
		*y = m->released.nclasses > 1 ? 0.0 : (k == 1) ? 1.0 : -1.0;
		return k;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a row has a label that model \"%s\" was not trained on", m->def.name),
			 errdetail("The model was trained on %d labels; see unlearn.models.classes.", m->released.nlabels),
			 errhint("Retrain the model with unlearn_train(..., replace => true) to add a class.")));
	return -1;					/* keep compiler quiet */
}
