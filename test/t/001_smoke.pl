# Smoke test: a fresh cluster can load the extension, and the analytic
# Gaussian mechanism gives the expected residual budget for sigma = 1 at
# (epsilon, delta) = (1, 1e-4): epsilon' = 0.3139...  Without
# shared_preload_libraries, CREATE EXTENSION refuses with a hint.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('smoke');
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
pass('CREATE EXTENSION unlearn');

my $budget = $node->safe_psql('postgres', 'SELECT unlearn_budget(1)');
like($budget, qr/^[0-9.eE+-]+$/, "unlearn_budget(1) is a number ($budget)");
cmp_ok($budget, '>', 0.31, 'unlearn_budget(1) > 0.31');
cmp_ok($budget, '<', 0.32, 'unlearn_budget(1) < 0.32');

$node->stop;

# without shared_preload_libraries the extension refuses to install
my $bare = PostgreSQL::Test::Cluster->new('bare');
$bare->init;
$bare->start;
my ($ret, $out, $err) = $bare->psql('postgres', 'CREATE EXTENSION unlearn');
isnt($ret, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($err, qr/unlearn must be loaded via shared_preload_libraries/, 'it says why');
like($err, qr/HINT:  Add unlearn to shared_preload_libraries/, 'and how to fix it');
$bare->stop;
done_testing();
