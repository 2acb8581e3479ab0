# A streaming standby replays the catalog but has no removal matrices (they
# are never in WAL).  It predicts with the primary's weights; once promoted,
# its first DELETE rebuilds the matrices by re-anchoring and its models go
# on forgetting, certified.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $primary = unlearn_node('primary', allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$primary->safe_psql('postgres', $DIGITS_SQL . q{
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 5);
});
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

$primary->safe_psql('postgres', 'DELETE FROM digits WHERE id <= 3');
$primary->wait_for_catchup($standby);
my $coef = $primary->safe_psql('postgres', "SELECT md5(coef::text) FROM unlearn.models");
is($standby->safe_psql('postgres', "SELECT md5(coef::text), removed FROM unlearn.models"), "$coef|3",
	'the standby has the weights after the DELETE');
is($standby->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10"),
	$primary->safe_psql('postgres', "SELECT unlearn_predict_class('digits', pixels) FROM digits WHERE id = 10"),
	'the standby predicts as the primary');
is($standby->safe_psql('postgres', 'SELECT resident FROM unlearn.status'), 'f',
	'the standby holds no matrices');

$primary->stop;
$standby->promote;
$standby->safe_psql('postgres', 'DELETE FROM digits WHERE id IN (4, 5)');
is($standby->safe_psql('postgres',
	"SELECT removed, retrains, reanchors, rows = (SELECT count(*) FROM digits) FROM unlearn.models"),
	'5|0|1|t', 'after promotion a DELETE reaches the model: one rebuild, no retrain');
is($standby->safe_psql('postgres', "SELECT certified FROM unlearn_verify('digits')"), 't',
	'certified on the promoted standby');
$standby->safe_psql('postgres', 'DELETE FROM digits WHERE id = 6');
is($standby->safe_psql('postgres', "SELECT removed, reanchors, resident FROM unlearn.models JOIN unlearn.status USING (model, removed)"),
	'6|1|t', 'removals go on with Newton steps');

$standby->stop;
done_testing();
