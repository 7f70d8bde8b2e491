#!/bin/sh
# Entrypoint of a queen-kafka pod in a StatefulSet. A manifest cannot do
# arithmetic, so this derives the two per-pod settings cluster mode needs
# from the pod's own name and then execs the facade:
#
#   QUEEN_KAFKA_NODE_ID         = StatefulSet ordinal + 1 (node ids are 1-64;
#                                 0 is the single-node identity)
#   QUEEN_KAFKA_ADVERTISED_ADDR = $POD_NAME.$QK_HEADLESS_SERVICE.$POD_NAMESPACE
#                                 .svc.$QK_CLUSTER_DOMAIN:$QK_KAFKA_PORT,
#                                 this pod's own name through the headless
#                                 Service, never a load-balanced address.
#
# Inputs: POD_NAME and POD_NAMESPACE (downward API, required);
# QK_HEADLESS_SERVICE (default queen-kafka), QK_KAFKA_PORT (default 9092),
# QK_CLUSTER_DOMAIN (default cluster.local), QK_EXEC (the program to exec,
# default /app/bin/queen-kafka; tests point it at env). Only shell builtins
# are used: the image carries a shell and nothing else.
set -eu

fail() {
	echo "entrypoint: $*" >&2
	exit 64
}

pod=${POD_NAME:-}
ns=${POD_NAMESPACE:-}
svc=${QK_HEADLESS_SERVICE:-queen-kafka}
port=${QK_KAFKA_PORT:-9092}
domain=${QK_CLUSTER_DOMAIN:-cluster.local}

[ -n "$pod" ] || fail "POD_NAME is not set; set it from the downward API (fieldRef metadata.name)"
[ -n "$ns" ] || fail "POD_NAMESPACE is not set; set it from the downward API (fieldRef metadata.namespace)"

# DNS labels only: these become parts of a host name.
for pair in "POD_NAME=$pod" "POD_NAMESPACE=$ns" "QK_HEADLESS_SERVICE=$svc"; do
	value=${pair#*=}
	case $value in
	'' | -* | *- | *[!a-z0-9-]*) fail "${pair%%=*} \"$value\" is not a DNS label ([a-z0-9-], no leading or trailing -)" ;;
	esac
done
case $domain in
'' | .* | *. | *[!a-z0-9.-]*) fail "QK_CLUSTER_DOMAIN \"$domain\" is not a DNS name" ;;
esac
case $port in
'' | 0* | *[!0-9]* | ??????*) fail "QK_KAFKA_PORT \"$port\" is not a TCP port" ;;
esac
[ "$port" -le 65535 ] || fail "QK_KAFKA_PORT \"$port\" is not a TCP port"

# A StatefulSet pod is named <statefulset>-<ordinal>.
ordinal=${pod##*-}
set_name=${pod%-*}
[ "$set_name" != "$pod" ] && [ -n "$set_name" ] ||
	fail "POD_NAME \"$pod\" is not <statefulset>-<ordinal>; this entrypoint only runs in a StatefulSet"
case $ordinal in
'' | *[!0-9]*) fail "POD_NAME \"$pod\" does not end in a StatefulSet ordinal" ;;
0) ;;
0* | ???*) fail "POD_NAME \"$pod\" has ordinal \"$ordinal\", which no StatefulSet of at most 64 replicas produces" ;;
esac
id=$((ordinal + 1))
[ "$id" -le 64 ] ||
	fail "POD_NAME \"$pod\" has ordinal $ordinal, but node ids are 1 to 64 (ordinal + 1): run at most 64 replicas"

if [ -n "${QUEEN_KAFKA_NODE_ID:-}" ] && [ "$QUEEN_KAFKA_NODE_ID" != "$id" ]; then
	fail "QUEEN_KAFKA_NODE_ID is set to \"$QUEEN_KAFKA_NODE_ID\" but this pod's ordinal makes it $id; remove it from the manifest"
fi

QUEEN_KAFKA_NODE_ID=$id
QUEEN_KAFKA_ADVERTISED_ADDR="$pod.$svc.$ns.svc.$domain:$port"
export QUEEN_KAFKA_NODE_ID QUEEN_KAFKA_ADVERTISED_ADDR

echo "entrypoint: $pod is node $QUEEN_KAFKA_NODE_ID advertising $QUEEN_KAFKA_ADVERTISED_ADDR" >&2
exec "${QK_EXEC:-/app/bin/queen-kafka}" "$@"
