# SPDX-License-Identifier: MIT
# redlease(1): test-cli.sh against a private redis-server; test-cli-tls.sh
# over TLS, on a redis-server it starts; test-cli-replicas.sh with
# --min-replicas, on a replica it starts; test-cli-sentinel.sh with
# --sentinel, on a Sentinel it starts; test-cli-cluster.sh with --cluster,
# on a Cluster it forms; test-help.sh checks --help against man 1 and the
# option parser against both.
CLI_TESTS = %reldir%/test-cli.sh %reldir%/test-cli-tls.sh %reldir%/test-cli-replicas.sh \
	%reldir%/test-cli-sentinel.sh %reldir%/test-cli-cluster.sh %reldir%/test-help.sh
# test-cli-quorum.sh: --quorum, on three redis-servers it starts.
CLI_TESTS += %reldir%/test-cli-quorum.sh
# test-cli-inherit.sh: a run under another's COMMAND joins its lease (man 1,
# INHERITED LEASES), on the harness's server and on a quorum it starts.
CLI_TESTS += %reldir%/test-cli-inherit.sh
# test-cli-ride.sh: a waiting run waits through failures (man 1, WAITING
# THROUGH FAILURES): a Sentinel failover, a Cluster primary killed, a
# quorum member killed, a server restarted; a server gone for good ends the
# wait with 69 after --max-outage.
CLI_TESTS += %reldir%/test-cli-ride.sh
TESTS += $(CLI_TESTS)
EXTRA_DIST += $(CLI_TESTS) %reldir%/cli-rig.sh
