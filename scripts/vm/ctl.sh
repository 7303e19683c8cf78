#!/usr/bin/env bash
# Runs INSIDE the conformance VM: the control-plane conformance recording.
#
#   ctl.sh OUT FIXDIR
#
# 1. Every line of FIXDIR/sequence.txt (scripts/vm/ctl_sequence.py) is run
#    in order by the real ipvsadm on a fresh IPVS; OUT/transcript.txt gets,
#    per command, its line, exit status, stdout and stderr, byte for byte:
#        cmd ARGS
#        exit N
#        stdout LEN
#        <LEN bytes>
#        stderr LEN
#        <LEN bytes>
#    (a newline after each block of bytes). A last word `<NAME` feeds
#    FIXDIR/NAME on standard input.
# 2. Every FIXDIR/keepalived/NAME.conf is loaded by the real keepalived
#    (checker process only, in the foreground); once `ipvsadm -S -n` is the
#    same twice in a row it is saved as OUT/keepalived/NAME.saved, then
#    keepalived is stopped and IPVS cleared.
set -uo pipefail
OUT=${1:?usage: ctl.sh OUT FIXDIR}
FIX=${2:?usage: ctl.sh OUT FIXDIR}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C
modprobe ip_vs
T=$OUT/transcript.txt
: >"$T"
set -f
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue;; esac
    read -r -a words <<<"$line"
    input=/dev/null
    last=${words[${#words[@]}-1]}
    if [ "${last:0:1}" = "<" ]; then
        input=$FIX/${last:1}
        unset 'words[${#words[@]}-1]'
    fi
    ipvsadm "${words[@]}" >"$OUT/o" 2>"$OUT/e" <"$input"
    rc=$?
    {
        printf 'cmd %s\nexit %d\nstdout %d\n' "$line" "$rc" "$(wc -c <"$OUT/o")"
        cat "$OUT/o"
        printf '\nstderr %d\n' "$(wc -c <"$OUT/e")"
        cat "$OUT/e"
        printf '\n'
    } >>"$T"
done <"$FIX/sequence.txt"
set +f
rm -f "$OUT/o" "$OUT/e"
ipvsadm -C
ipvsadm --set 900 120 300

mkdir -p "$OUT/keepalived"
for conf in "$FIX"/keepalived/*.conf; do
    name=$(basename "$conf" .conf)
    log=$OUT/keepalived/$name.log
    keepalived --dont-fork --log-console --log-detail --check --use-file="$conf" \
        --pid="$OUT/keepalived/ka.pid" --checkers_pid="$OUT/keepalived/ka-checkers.pid" >"$log" 2>&1 &
    kpid=$!
    prev=
    for _ in $(seq 1 30); do
        sleep 1
        cur=$(ipvsadm -S -n)
        if [ -n "$cur" ] && [ "$cur" = "$prev" ]; then break; fi
        prev=$cur
    done
    ipvsadm -S -n >"$OUT/keepalived/$name.saved"
    kill -TERM "$kpid"
    wait "$kpid"
    ipvsadm -C
done
echo done >"$OUT/ctl-status"
