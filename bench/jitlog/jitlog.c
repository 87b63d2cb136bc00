// jitlog: a JVMTI agent that logs each method the JIT compiles: its code (code.bin) and an index (index.txt) of
// the code's address, size and name, with the inlining stack (method, bytecode index, line) at each PC the JIT
// describes. bench/jit-profile.sh uses it to attribute perf's samples of JIT-compiled code to inlined source
// lines. A measuring aid: not part of jrdma's libraries.
#include <jvmti.h>
#include <jvmticmlr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
static FILE *idx, *bin;
static long binoff;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void name(jvmtiEnv *j, jmethodID m, char *out, size_t n) {
  char *mn = 0, *sig = 0, *cs = 0; jclass c;
  (*j)->GetMethodName(j, m, &mn, &sig, 0);
  (*j)->GetMethodDeclaringClass(j, m, &c);
  (*j)->GetClassSignature(j, c, &cs, 0);
  snprintf(out, n, "%s.%s", cs ? cs : "?", mn ? mn : "?");
  for (char *p = out; *p; p++) if (*p == ' ') *p = '_';
  if (mn) (*j)->Deallocate(j, (unsigned char *) mn);
  if (sig) (*j)->Deallocate(j, (unsigned char *) sig);
  if (cs) (*j)->Deallocate(j, (unsigned char *) cs);
}

static int line(jvmtiEnv *j, jmethodID m, jint bci) {
  jint n = 0; jvmtiLineNumberEntry *t = 0; int l = -1;
  if ((*j)->GetLineNumberTable(j, m, &n, &t) != JVMTI_ERROR_NONE) return -1;
  for (int i = 0; i < n; i++) if (t[i].start_location <= bci) l = t[i].line_number;
  (*j)->Deallocate(j, (unsigned char *) t);
  return l;
}

static void JNICALL load(jvmtiEnv *j, jmethodID m, jint size, const void *addr, jint ml,
                         const jvmtiAddrLocationMap *map, const void *info) {
  char nm[512];
  name(j, m, nm, sizeof nm);
  pthread_mutex_lock(&mu);
  fprintf(idx, "M %lx %d %ld %s\n", (unsigned long) addr, size, binoff, nm);
  fwrite(addr, 1, size, bin);
  binoff += size;
  for (const jvmtiCompiledMethodLoadRecordHeader *h = info; h; h = h->next) {
    if (h->kind != JVMTI_CMLR_INLINE_INFO) continue;
    const jvmtiCompiledMethodLoadInlineRecord *r = (const void *) h;
    for (int i = 0; i < r->numpcs; i++) {
      PCStackInfo *p = &r->pcinfo[i];
      fprintf(idx, "P %lx", (unsigned long) p->pc);
      for (int k = 0; k < p->numstackframes; k++) {
        char fn[512];
        name(j, p->methods[k], fn, sizeof fn);
        fprintf(idx, " %s@%d:%d", fn, p->bcis[k], line(j, p->methods[k], p->bcis[k]));
      }
      fputc('\n', idx);
    }
  }
  fflush(idx); fflush(bin);
  pthread_mutex_unlock(&mu);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *opts, void *res) {
  jvmtiEnv *j;
  if ((*vm)->GetEnv(vm, (void **) &j, JVMTI_VERSION_1_2) != JNI_OK) return 1;
  char p[600];
  const char *dir = opts && *opts ? opts : "/tmp/prof";
  snprintf(p, sizeof p, "%s/index.txt", dir); idx = fopen(p, "w");
  snprintf(p, sizeof p, "%s/code.bin", dir); bin = fopen(p, "wb");
  jvmtiCapabilities c; memset(&c, 0, sizeof c);
  c.can_generate_compiled_method_load_events = 1; c.can_get_line_numbers = 1;
  (*j)->AddCapabilities(j, &c);
  jvmtiEventCallbacks cb; memset(&cb, 0, sizeof cb);
  cb.CompiledMethodLoad = load;
  (*j)->SetEventCallbacks(j, &cb, sizeof cb);
  (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, 0);
  return 0;
}
