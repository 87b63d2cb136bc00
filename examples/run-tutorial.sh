#!/usr/bin/env bash
# Builds jrdma from this checkout into the local Maven repository, builds the tutorial
# (examples/tutorial, an ordinary Maven project that depends on jrdma by its coordinates) and
# runs it on the class path and on the module path; each run's output must equal
# examples/tutorial/expected-output.txt. Exits non-zero on any failure.
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
echo "run-tutorial: 2 passed, 0 failed"
