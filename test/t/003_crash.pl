# A crash (or restart) empties shared memory, and with it the removal
# matrices.  After restart the model still predicts; its first DELETE
# rebuilds the matrices by re-anchoring at the current w (no retrain, no
# fresh noise) and the certificate holds.  WAL never carries the matrices.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('crash');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$node->safe_psql('postgres', $DIGITS_SQL . q{
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', lambda => 1e-3, sigma => 5);
DELETE FROM digits WHERE id <= 3;
});
my $before = $node->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10");
my $noise = $node->safe_psql('postgres', "SELECT md5(noise) FROM unlearn.model_state");
is($node->safe_psql('postgres', 'SELECT resident FROM unlearn.status'), 't', 'the matrices are resident');

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', 'SELECT resident FROM unlearn.status'), 'f',
	'after the crash the matrices are gone');
is($node->safe_psql('postgres', "SELECT removed, retrains FROM unlearn.models WHERE model = 'digits'"),
	'3|0', 'the logged catalog survived the crash');
is($node->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10"),
	$before, 'the model still predicts after the crash');

my ($ret, $out, $err) = $node->psql('postgres', 'DELETE FROM digits WHERE id = 4');
is($ret, 0, 'DELETE after the crash succeeds');
is($node->safe_psql('postgres',
	"SELECT removed, retrains, reanchors, rows = (SELECT count(*) FROM digits) FROM unlearn.models"),
	'4|0|1|t', 'the model rebuilt its matrices by re-anchoring, without retraining');
is($node->safe_psql('postgres', "SELECT string_agg(operation, ',' ORDER BY id) FROM unlearn.ledger"),
	'train,delete,rebuild,delete', 'the ledger records the rebuild');
is($node->safe_psql('postgres', "SELECT md5(noise) FROM unlearn.model_state"), $noise,
	'the noise b is the one drawn at training');
is($node->safe_psql('postgres', "SELECT certified FROM unlearn_verify('digits')"), 't',
	'the certificate holds after the rebuild');
$node->safe_psql('postgres', 'DELETE FROM digits WHERE id = 5');
is($node->safe_psql('postgres', "SELECT removed, retrains, reanchors FROM unlearn.models"), '5|0|1',
	'removals go on with Newton steps');
is($node->safe_psql('postgres', 'SELECT resident FROM unlearn.status'), 't', 'resident again');

$node->stop;
done_testing();
