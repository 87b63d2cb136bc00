#!/usr/bin/env bash
# Builds jrdma from this checkout into the local Maven repository, builds the tutorial
# (examples/tutorial, an ordinary Maven project that depends on jrdma by its coordinates) and
# runs it on the class path and on the module path; each run's output must equal
# examples/tutorial/expected-output.txt. Then runs the service example (hello.Service and three
# hello.Client processes, one killed mid-way) and checks their output against
# examples/tutorial/expected-service-output.txt. Exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tut="$root/examples/tutorial"
cd "$root"

fail() { echo "run-tutorial: FAILED: $*" >&2; exit 1; }

# 1. the tutorial's source is the README's, verbatim (Hello.java adds only its package line)
readme_block="$(awk '/^```java$/ {on=1; next} on && /^```$/ {exit} on' README.md)"
hello_body="$(sed '1{/^package hello;$/d}' "$tut/src/main/java/hello/Hello.java" | sed '1{/^$/d}')"
if [ "$readme_block" != "$hello_body" ]; then
  diff <(printf '%s\n' "$readme_block") <(printf '%s\n' "$hello_body") >&2 || true
  fail "README.md's tutorial and examples/tutorial/src/main/java/hello/Hello.java differ (< README, > Hello.java): update both"
fi

# 2. JDK 25, as the launcher finds it
JAVA_HOME="$(./jrdma --java-home)" || fail "no JDK 25 (see ./jrdma --java-home)"
export JAVA_HOME
java="$JAVA_HOME/bin/java"

# 3. jrdma into the local Maven repository, then the tutorial against it, at this checkout's version
version="$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -n1)"
bom_version="$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' jrdma-bom/pom.xml | head -n1)"
[ -n "$version" ] && [ "$version" = "$bom_version" ] \
  || fail "jrdma-bom's version ($bom_version) must be the project's ($version): update jrdma-bom/pom.xml"
echo "run-tutorial: installing jrdma into the local Maven repository (./mvnw -q -DskipTests install)"
./mvnw -q -B -DskipTests install || fail "./mvnw install"
echo "run-tutorial: building the tutorial against jrdma $version (./mvnw -f examples/tutorial/pom.xml package)"
./mvnw -q -B -f "$tut/pom.xml" -Djrdma.version="$version" clean package || fail "building examples/tutorial"

# 4. run it both ways; stdout must be the expected output, and stderr must not show a missing flag
check() { # $1 = name, rest = the java command
  local name="$1"; shift
  local out err
  out="$(mktemp)"; err="$(mktemp)"
  echo "run-tutorial: $name: java $*"
  if ! timeout 120 "$java" "$@" >"$out" 2>"$err"; then
    cat "$err" >&2; rm -f "$out" "$err"; fail "$name: the program failed"
  fi
  if ! diff -u "$tut/expected-output.txt" "$out" >&2; then
    cat "$err" >&2; rm -f "$out" "$err"; fail "$name: output differs from examples/tutorial/expected-output.txt (- expected, + got)"
  fi
  if grep -E 'restricted method|enable-native-access|add-opens' "$err" >&2; then
    rm -f "$out" "$err"; fail "$name: the JVM or the engine reports a missing flag (above)"
  fi
  cat "$out"; rm -f "$out" "$err"
}
cd "$tut"
check "class path" --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "target/jrdma-tutorial.jar:target/lib/*" hello.Hello
check "module path" --enable-native-access=io.jrdma.engine --add-opens java.base/sun.nio.ch=io.jrdma.engine \
  -p "target/jrdma-tutorial.jar:target/lib" -m hello/hello.Hello

# 5. the service (hello.Service, on the module path) and three clients (hello.Client, on the class
#    path): alice and bob stay connected, so with --max-clients 2 carol is rejected; alice is killed
#    (SIGKILL), the service frees her resources, carol is served; SIGTERM stops the service, which
#    disconnects bob. Each process's output, in that order, must equal expected-service-output.txt.
#    Every wait is for a line or a file, with a deadline; every process is killed on the way out.
echo "run-tutorial: service: a service and 3 clients, one of them killed"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
# counters files in the work folder (jrdma.stat.dir): the killed client's is removed with it, not left in /dev/shm
stat_flag="-Djrdma.stat.dir=$work/stat"
cp_flags=("$stat_flag" --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED -cp "target/jrdma-tutorial.jar:target/lib/*")
await() { # $1 = file, $2 = a line it must come to contain (fixed string), $3 = what is waited for
  local deadline=$(( $(date +%s) + 30 ))
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { cat "$work"/*.out "$work"/*.err >&2 2>/dev/null; fail "service: no '$2' within 30 s ($3)"; }
    sleep 0.1
  done
}
"$java" "$stat_flag" --enable-native-access=io.jrdma.engine --add-opens java.base/sun.nio.ch=io.jrdma.engine \
  -p "target/jrdma-tutorial.jar:target/lib" -m hello/hello.Service --port-file "$work/port" --max-clients 2 \
  >"$work/service.out" 2>"$work/service.err" & service=$!; pids+=("$service")
await "$work/port" "" "the service's port" ; await "$work/service.out" "listening" "the service to listen"
port="$(cat "$work/port")"
client() { # $1 = output name, rest = arguments; in the foreground, bounded
  local name="$1"; shift
  timeout 60 "$java" "${cp_flags[@]}" hello.Client "$port" "$@" >"$work/$name.out" 2>"$work/$name.err"
}
# the background processes are the JVMs themselves (no wrapper), so their pids are the ones to signal
"$java" "${cp_flags[@]}" hello.Client "$port" alice --stay >"$work/alice.out" 2>"$work/alice.err" & alice=$!; pids+=("$alice")
await "$work/alice.out" "alice: staying" "alice served"
"$java" "${cp_flags[@]}" hello.Client "$port" bob --stay >"$work/bob.out" 2>"$work/bob.err" & bob=$!; pids+=("$bob")
await "$work/bob.out" "bob: staying" "bob served"
client carol-busy carol || fail "service: carol's first client failed"
kill -9 "$alice"; wait "$alice" 2>/dev/null || true
await "$work/service.out" "client 1 freed" "alice's departure seen and her resources freed"
client carol carol || fail "service: carol's second client failed"
await "$work/service.out" "client 3 freed" "carol's departure"
kill -TERM "$service"
exited() { # $1 = pid, $2 = name: waits at most 30 s for it to end
  local deadline=$(( $(date +%s) + 30 ))
  while kill -0 "$1" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "service: $2 still running 30 s later"
    sleep 0.1
  done
}
exited "$service" "the service after SIGTERM"; exited "$bob" "bob after the service stopped"
rc=0; wait "$service" || rc=$?
[ "$rc" = 143 ] || { cat "$work/service.err" >&2; fail "service: exit status $rc after SIGTERM (expected 143)"; }
rc=0; wait "$bob" || rc=$?
[ "$rc" = 0 ] || { cat "$work/bob.err" >&2; fail "service: bob exited with $rc"; }
for name in service alice bob carol-busy carol; do echo "== $name"; cat "$work/$name.out"; done >"$work/all"
if ! diff -u "$tut/expected-service-output.txt" "$work/all" >&2; then
  cat "$work"/*.err >&2; fail "service: output differs from examples/tutorial/expected-service-output.txt (- expected, + got)"
fi
if cat "$work"/*.err | grep -E 'restricted method|enable-native-access|add-opens|Exception' >&2; then
  fail "service: a process reported an error or a missing flag (above)"
fi
cat "$work/all"
echo "run-tutorial: 3 passed, 0 failed"
