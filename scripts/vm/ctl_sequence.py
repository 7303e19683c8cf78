#!/usr/bin/env python3
"""Generates the control-plane conformance sequence: ipvsadm command lines,
one per line, run in order on an empty IPVS by the real ipvsadm in the VM
(scripts/vm/ctl.sh) and by lvsnic's CLI against its daemon
(host-driver/tests/ctl_conformance.rs).

    scripts/vm/ctl_sequence.py > tests/fixtures/kernel/ctl/sequence.txt

Words are separated by single spaces (no quoting). A last word `<NAME`
feeds the file NAME (next to sequence.txt) on standard input. `#` lines
are comments. Deterministic: the same sequence on every run.
"""

SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos"]
LISTINGS = [
    "-L -n", "-L -n --stats", "-L -n --rate", "-L -n --exact", "-L -n --thresholds",
    "-L -n --persistent-conn", "-L -n --sort", "-L -n -c", "-L --timeout", "-S -n",
    "-L -n --stats --exact", "-L -n --rate --exact", "-L -n --thresholds --persistent-conn",
    "-L -n -c --persistent-conn", "-Ln", "-l -n", "-S -n --exact", "-L -n -c --sort",
]


def main():
    out = []
    add = out.append

    add("# empty table: every listing")
    for l in LISTINGS:
        add(l)
    add("-v")
    add("--version")
    add("-h")

    add("# one service per scheduler")
    for i, s in enumerate(SCHEDULERS, 1):
        add(f"-A -t 10.1.0.{i}:80 -s {s}")
    add("-A -t 10.1.1.1:80")
    add("-A -t 10.1.1.2:443 -s sh -b sh-fallback,sh-port")
    add("-A -t 10.1.1.3:443 -s mh -b mh-fallback,mh-port")
    add("-A -t 10.1.1.4:80 -s rr -p")
    add("-A -t 10.1.1.5:80 -s wlc -p 60 -M 255.255.255.0")
    add("-A -t 10.1.1.6:0 -s rr -p 120")
    add("-A -u 10.1.1.7:53 -s rr")
    add("-A -u 10.1.1.8:53 -s wlc -p 300 -M 255.255.0.0")
    add("-A -u 10.1.1.9:53 -s rr -o")
    add("-A -t 10.1.1.10:80 -s none")
    add("-D -t 10.1.1.10:80")

    add("# real servers: every forwarding method, weights, thresholds")
    add("-a -t 10.1.0.1:80 -r 192.168.20.1:80 -m -w 1")
    add("-a -t 10.1.0.1:80 -r 192.168.20.2:8080 -m -w 3")
    add("-a -t 10.1.0.1:80 -r 192.168.20.3 -m")
    add("-a -t 10.1.0.2:80 -r 192.168.20.4:80 -g -w 2")
    add("-a -t 10.1.0.2:80 -r 192.168.20.5 -g")
    add("-a -t 10.1.0.3:80 -r 192.168.20.6:80 -i -w 0")
    add("-a -t 10.1.0.3:80 -r 192.168.20.7:80 -i --tun-type ipip")
    add("-a -t 10.1.0.4:80 -r 192.168.20.8:80 -m -w 65535 -x 100 -y 50")
    add("-a -t 10.1.0.4:80 -r 192.168.20.9:80 -m -w 10 -x 1000")
    add("-a -t 10.1.0.4:80 -r 192.168.20.10:80 -m -w 10 -y 7")
    add("-a -t 10.1.1.4:80 -r 192.168.20.11:80 -g -w 1")
    add("-a -t 10.1.1.6:0 -r 192.168.20.12 -g")
    add("-a -u 10.1.1.7:53 -r 192.168.20.13:53 -m -w 5")
    add("-a -u 10.1.1.7:53 -r 192.168.20.14:5353 -m -w 1")
    add("-a -u 10.1.1.8:53 -r 192.168.20.15:53 -g -w 2")
    add("-a -t 10.1.0.2:80 -r 192.168.20.16:8080 -g")
    add("-a -t 10.1.0.3:80 -r 192.168.20.17:81 -i")
    for l in LISTINGS:
        add(l)

    add("# listing filters")
    for svc in ["-t 10.1.0.1:80", "-t 10.1.0.4:80", "-u 10.1.1.7:53", "-t 10.1.1.6:0"]:
        for opt in ["", " --stats", " --rate", " --exact", " --thresholds", " --persistent-conn"]:
            add(f"-L -n {svc}{opt}")
    add("-S -n -t 10.1.0.4:80")
    add("-L -n -t 10.9.9.9:80")
    add("-L -n -u 10.1.0.1:80")
    add("-S -n -t 10.9.9.9:80")

    add("# edits")
    add("-E -t 10.1.0.1:80 -s wrr")
    add("-E -t 10.1.0.2:80 -s sh -b sh-port -p 30")
    add("-E -t 10.1.1.4:80 -s rr")
    add("-E -t 10.1.1.5:80 -s lc -p 90 -M 255.255.0.0")
    add("-e -t 10.1.0.1:80 -r 192.168.20.1:80 -m -w 7")
    add("-e -t 10.1.0.1:80 -r 192.168.20.2:8080 -g -w 2")
    add("-e -t 10.1.0.4:80 -r 192.168.20.8:80 -m -w 1 -x 5 -y 2")
    add("-e -t 10.1.0.3:80 -r 192.168.20.7:80 -i -w 4")
    add("-S -n")
    add("-L -n --thresholds")

    add("# errors: duplicates, missing things")
    add("-A -t 10.1.0.1:80 -s rr")
    add("-A -u 10.1.1.7:53")
    add("-a -t 10.1.0.1:80 -r 192.168.20.1:80 -m")
    add("-a -t 10.9.9.9:80 -r 192.168.20.1:80 -m")
    add("-e -t 10.1.0.1:80 -r 192.168.20.99:80 -m -w 1")
    add("-e -t 10.9.9.9:80 -r 192.168.20.1:80 -m -w 1")
    add("-E -t 10.9.9.9:80 -s rr")
    add("-D -t 10.9.9.9:80")
    add("-D -u 10.1.0.1:80")
    add("-d -t 10.1.0.1:80 -r 192.168.20.99:80")
    add("-d -t 10.9.9.9:80 -r 192.168.20.1:80")
    add("-Z -t 10.9.9.9:80")

    add("# errors: bad addresses, ports, schedulers, weights, options")
    for a in ["10.1.0.300:80", "10.1.0:80", "10.1.0.1:70000", "10.1.0.1:abc", "10.1.0.1:-1", "10.1.0.1:",
              ":80", "10.1.0.1", "10.1.0.1:0", "[2001:db8::1]:80", "1.2.3.4.5:80"]:
        add(f"-A -t {a} -s rr")
    add("-D -t [2001:db8::1]:80")
    add("-A -t 10.1.2.1:80 -s nosuch")
    add("-A -t 10.1.2.2:80 -s RR")
    add("-A -t 10.1.2.3:80 -s rr -p abc")
    add("-A -t 10.1.2.4:80 -s rr -p 0")
    add("-A -t 10.1.2.5:80 -s rr -M 255.255.255.0")
    add("-A -t 10.1.2.6:80 -s rr -p 60 -M 255.0.255.0")
    add("-A -t 10.1.2.7:80 -s sh -b nosuch")
    add("-A -t 10.1.2.8:80 -s rr -o")
    add("-A -t 10.1.2.12:80 -s rr -p 60 -M 255.255.255.255")
    add("-A -t 10.1.2.13:80 -s rr -p 4294967295")
    add("-A -t 10.1.2.14:80 -s rr -p 4294967296")
    add("-A -t 10.1.2.15:80 -s mh -b mh-fallback,sh-port")
    add("-A -t 10.1.2.16:80 -s rr -b flag-1")
    add("-A -t 10.1.2.9:80 -s")
    add("-A -s rr")
    add("-A -t 10.1.2.10:80 -u 10.1.2.10:80 -s rr")
    add("-A -f 1 -s rr")
    add("-D -f 1")
    add("-A -f 0 -s rr")
    add("-A -f abc -s rr")
    for w in ["-1", "65536", "abc", "1.5", ""]:
        add(f"-a -t 10.1.0.1:80 -r 192.168.21.1:80 -m -w {w}".rstrip())
    add("-a -t 10.1.0.1:80 -r 192.168.21.2:80 -m -x -1")
    add("-a -t 10.1.0.1:80 -r 192.168.21.3:80 -m -y abc")
    add("-a -t 10.1.0.1:80 -r 192.168.21.4:99999 -m")
    add("-a -t 10.1.0.1:80 -r 192.168.21.300:80 -m")
    add("-a -t 10.1.0.1:80 -m -w 1")
    add("-a -t 10.1.0.1:80 -r 192.168.21.5:80 -m -g")
    add("-a -t 10.1.0.1:80 -r 192.168.21.6:80 -i --tun-type gue")
    add("-a -t 10.1.0.1:80 -r 192.168.21.7:80 -i --tun-type nosuch")
    add("-a -t 10.1.0.1:80 -r 192.168.21.8:80 -m --tun-type ipip")
    add("--nosuch")
    add("-X")
    add("-L -n --nosuch")
    add("-L -n -c --stats")
    add("-L -n --stats --rate")
    add("-A -t 10.1.2.11:80 -s rr --stats")
    add("-L -n extra")
    add("-S -n -c")

    add("# timeouts")
    add("--set 10 20 30")
    add("-L --timeout")
    add("--set 0 0 0")
    add("-L --timeout")
    add("--set 0 5 0")
    add("-L --timeout")
    add("--set abc 1 1")
    add("--set 1 2")
    add("--set -1 1 1")
    add("--set 2147483647 1 1")
    add("--set 900 120 300")
    add("-L --timeout")

    add("# more options: tunnels, persistence engines, sorting, zeroing")
    add("-A -t 10.1.3.1:80 -s rr")
    add("-a -t 10.1.3.1:80 -r 192.168.21.10:80 -i --tun-type gue --tun-port 6080")
    add("-a -t 10.1.3.1:80 -r 192.168.21.11:80 -i --tun-type gue --tun-port 6080 --tun-nocsum")
    add("-a -t 10.1.3.1:80 -r 192.168.21.12:80 -i --tun-type gre --tun-csum")
    add("-a -t 10.1.3.1:80 -r 192.168.21.13:80 -i --tun-type gue")
    add("-a -t 10.1.3.1:80 -r 192.168.21.14:80 -i --tun-type ipip --tun-port 1")
    # lvsnic refuses GUE/GRE tunnels: delete them again on the kernel side
    for h in (10, 11, 12):
        add(f"-d -t 10.1.3.1:80 -r 192.168.21.{h}:80")
    add("-e -t 10.1.3.1:80 -r 192.168.21.10:80 -m -w 2")
    add("-e -t 10.1.3.1:80 -r 192.168.21.14:80 -i -w 2 --tun-type ipip")
    # lvsnic refuses persistence engines: delete them again on the kernel side
    add("-A -u 10.1.3.2:5060 -s rr -p 60 --pe sip")
    add("-A -u 10.1.3.3:5060 -s rr --pe sip")
    add("-D -u 10.1.3.2:5060")
    add("-D -u 10.1.3.3:5060")
    add("-A -u 10.1.3.4:5060 -s rr -p 60 --pe nosuch")
    add("-A -t 10.1.3.5:80 -s rr -p 60 -M 24")
    add("-A -t 10.1.3.6:80 -s wlc -p 60 -M 0.0.0.0")
    add("-A -t 10.1.3.7:80 -s sh -b sh-fallback")
    add("-E -t 10.1.3.7:80 -s mh")
    add("-E -t 10.1.3.7:80 -s sh -b sh-port,sh-fallback")
    add("-E -t 10.1.3.7:80")
    add("-A -t 10.1.3.8:80 -s rr -p 60")
    add("-E -t 10.1.3.8:80 -s rr")
    add("-a -t 10.1.3.8:80 -r 192.168.21.15 -g -w 3 -x 10 -y 20")
    add("-a -t 10.1.3.8:80 -r 192.168.21.16 -w 3")
    add("-a -t 10.1.3.8:80 -r 192.168.21.17:0 -m")
    add("-L -n --nosort")
    add("-L -n --sort --exact")
    add("-L -n -t 10.1.3.1:80 --stats --exact")
    add("-S -n -t 10.1.3.1:80")
    add("-L -n -t 10.1.3.8:80 --thresholds")
    add("-S -n -u 10.1.1.7:53")
    add("-L -n -c -t 10.1.3.8:80")
    add("-Z -u 10.1.1.7:53")
    add("-L -n --rate -u 10.1.1.7:53")
    add("-L -n -u 10.1.1.7:53 -t 10.1.3.8:80")
    add("-L -c --timeout")
    add("-L --timeout -n")
    add("-S")
    add("-L -n -6")
    add("-a -t 10.1.3.8:80 -r [2001:db8::5]:80 -g")
    add("-d -t 10.1.3.1:80")
    add("-D")
    add("-C extra")
    add("-C -t 10.1.3.1:80")
    add("-S -n")

    add("# zero, delete, restore, clear")
    add("-Z")
    add("-Z -t 10.1.0.1:80")
    add("-d -t 10.1.0.1:80 -r 192.168.20.3:80")
    add("-d -t 10.1.0.1:80 -r 192.168.20.3:80")
    add("-D -t 10.1.0.14:80")
    add("-D -u 10.1.1.7:53")
    add("-S -n")
    add("-C")
    add("-L -n")
    add("-R <restore-ok.txt")
    add("-S -n")
    add("-L -n --stats")
    add("-R <restore-dup.txt")
    add("-S -n")
    add("-R <restore-words.txt")
    add("-S -n")
    add("-R <restore-bad.txt")
    add("-S -n")
    add("-C")
    add("-S -n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
