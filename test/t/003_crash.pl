# A crash empties the unlogged matrix blocks.  After restart the model
# still predicts, the next DELETE retrains it (a valid removal), and the
# certificate holds again.  WAL carries no version of the matrices.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$node->safe_psql('postgres', q{
CREATE TABLE digits (id serial PRIMARY KEY, label int, pixels float8[]);
\copy digits (pixels, label) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz | awk -F, ''{ s = $1; for (i = 2; i < NF; i++) s = s "," $i; print "{" s "}\t" $NF }'''
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', lambda => 1e-3, sigma => 5);
DELETE FROM digits WHERE id <= 3;
});
my $before = $node->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10");
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM unlearn.model_blocks'), '>', 0, 'matrix blocks exist');

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', 'SELECT count(*) FROM unlearn.model_blocks'), '0',
	'crash recovery emptied the unlogged blocks');
is($node->safe_psql('postgres', "SELECT removed, retrains FROM unlearn.models WHERE model = 'digits'"),
	'3|0', 'the logged catalog survived the crash');
is($node->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10"),
	$before, 'the model still predicts after the crash');

my ($ret, $out, $err) = $node->psql('postgres', 'DELETE FROM digits WHERE id = 4');
is($ret, 0, 'DELETE after the crash succeeds');
like($err, qr/Hessian factor and Gram matrix were lost in a crash/, 'it says why it retrains');
is($node->safe_psql('postgres', "SELECT removed, retrains, rows = (SELECT count(*) FROM digits) FROM unlearn.models"),
	'4|1|t', 'the model retrained on the remaining rows');
is($node->safe_psql('postgres', "SELECT certified FROM unlearn_verify('digits')"), 't',
	'the certificate holds after the retrain');
$node->safe_psql('postgres', 'DELETE FROM digits WHERE id = 5');
is($node->safe_psql('postgres', "SELECT removed, retrains FROM unlearn.models"), '5|1',
	'removals go on with Newton steps');

$node->stop;
done_testing();
