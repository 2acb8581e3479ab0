# A store too small for the models: a statement that needs room evicts the
# least recently used matrices (that model rebuilds on its next change), a
# model whose matrices could never fit evicts nothing and rebuilds each
# time, and no COMMIT ever fails for want of store memory.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('state_memory');
$node->append_conf('postgresql.conf', 'unlearn.state_memory = 2MB');
$node->start;

# rows of d random features and a label that depends on them
sub wide_table
{
	my ($name, $d, $n) = @_;
	return qq{
SELECT setseed(0.25);
CREATE TABLE $name (id int PRIMARY KEY, label int, x float8[]);
INSERT INTO $name
SELECT i, 0, ARRAY(SELECT random() - 0.5 FROM generate_series(1, $d) WHERE i > 0)
FROM generate_series(1, $n) i;
UPDATE $name SET label = (x[1] + x[2] - x[3] + 0.3 * (random() - 0.5) > 0)::int;
};
}

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
is($node->safe_psql('postgres', 'SELECT state_memory FROM unlearn_runtime()'), 2 * 1024 * 1024,
	'the store has 2MB');

# four models of 201 weights with K' (325kB each): two copies of all four
# do not fit
$node->safe_psql('postgres', wide_table('wide', 200, 400) . q{
SELECT count(*) FROM (SELECT unlearn_train('w' || k, 'wide', 'label', '{x}', sigma => 1, options => '{"bound": "guo"}')
					  FROM generate_series(1, 4) k) t;
});

my $rounds = 4;
my $committed = 0;
for my $r (1 .. $rounds)
{
	my ($ret) = $node->psql('postgres', "DELETE FROM wide WHERE id = $r");
	$committed++ if $ret == 0;
}
is($committed, $rounds, 'every DELETE commits while the store evicts');
cmp_ok($node->safe_psql('postgres', 'SELECT evictions FROM unlearn_runtime()'), '>', 0,
	'the store evicted matrices to make room');
is($node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT removed::text || '/' || retrains, ',') FROM unlearn.models}),
	"$rounds/0", 'every model took every removal, without retraining');
is($node->safe_psql('postgres', q{
SELECT bool_and(v.certified) FROM unlearn.models m, unlearn_verify(m.model) v}),
	't', 'every model is certified');
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM unlearn.ledger WHERE operation = 'rebuild'"),
	'>', 0, 'the evicted models rebuilt their matrices');

# least squares through the evictions equals a refit
$node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn_train('ls', 'wide', 'label', '{x}', loss => 'squared', sigma => 0);
DELETE FROM wide WHERE id BETWEEN 10 AND 12;
});
cmp_ok($node->safe_psql('postgres', q{SELECT retrain_distance FROM unlearn_verify('ls')}),
	'<', 1e-9, 'least squares after evictions equals a refit');

# a model whose matrices (2.0MB with K') can never fit in the store
$node->safe_psql('postgres', wide_table('wider', 500, 600) . q{
SELECT count(*) FROM unlearn_train('big', 'wider', 'label', '{x}', sigma => 1, options => '{"bound": "guo"}');
});
my $resident = $node->safe_psql('postgres', q{
SELECT string_agg(model || ':' || resident, ',' ORDER BY model) FROM unlearn.status});
my $evictions = $node->safe_psql('postgres', 'SELECT evictions FROM unlearn_runtime()');
my ($ret, $out, $err) = $node->psql('postgres', 'DELETE FROM wider WHERE id <= 2');
is($ret, 0, 'a DELETE on the unfittable model commits');
is($node->safe_psql('postgres', 'SELECT evictions FROM unlearn_runtime()'), $evictions,
	'the unfittable model evicts nothing');
is($node->safe_psql('postgres', q{
SELECT string_agg(model || ':' || resident, ',' ORDER BY model) FROM unlearn.status}),
	$resident, 'the other models stay as resident as they were');
like($resident, qr/big:f/, 'the unfittable model is not resident');
is($node->safe_psql('postgres', q{SELECT removed || '/' || retrains FROM unlearn.models WHERE model = 'big'}),
	'2/0', 'it took the removals without retraining');
is($node->safe_psql('postgres', q{SELECT certified FROM unlearn_verify('big')}), 't',
	'and it is certified');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE model = 'big' AND operation = 'rebuild'}), 1,
	'it rebuilt its matrices for the change');

$node->stop;
done_testing();
