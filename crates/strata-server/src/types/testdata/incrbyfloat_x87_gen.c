/* Makes incrbyfloat_x87.tsv: what redis-server's INCRBYFLOAT gives on x86-64 Linux, where
 * long double is the x87 80-bit format. Each line: a, b, and the reply to SET k a then
 * INCRBYFLOAT k b (BADA/BADB: not a valid float; NANINF: the sum is not finite), computed
 * with glibc's strtold and printf("%.17Lf") under Redis's string2ld checks and trimming.
 *   gcc -O1 -o gen incrbyfloat_x87_gen.c -lm && ./gen > all.tsv
 *   awk -F'\t' 'length($0) < 160' all.tsv | awk 'NR % 3 == 1' > incrbyfloat_x87.tsv
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <errno.h>
#include <ctype.h>
static int s2ld(const char *s, long double *dp) {
    char *eptr; errno = 0; if (strlen(s) == 0 || strlen(s) >= 5120) return 0;
    long double v = strtold(s, &eptr);
    if (isspace(s[0]) || eptr[0] != '\0' || (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) || errno == EINVAL || isnan(v)) return 0;
    *dp = v; return 1;
}
static void human(long double value, char *buf) {
    int l = snprintf(buf, 6000, "%.17Lf", value);
    if (strchr(buf,'.')) { char *p = buf+l-1; while (*p=='0') {p--; l--;} if (*p=='.') l--; }
    if (l==2 && buf[0]=='-' && buf[1]=='0') { buf[0]='0'; l=1; }
    buf[l]=0;
}
static void rnd(char *out) {
    int kind = rand()%6;
    double m = (double)rand()/RAND_MAX * (rand()%2 ? 1 : -1);
    switch (kind) {
    case 0: sprintf(out, "%.*f", rand()%20, m*pow(10, rand()%8)); break;
    case 1: sprintf(out, "%.*e", rand()%25, m*1.0); out[strlen(out)-3]=0; sprintf(out+strlen(out), "%d", rand()%60-30); break;
    case 2: sprintf(out, "%d.%d", rand()%1000 - 500, rand()%1000); break;
    case 3: sprintf(out, "%.17g", m*pow(10, rand()%40-20)); break;
    case 4: sprintf(out, "%La", (long double)m*powl(2, rand()%200-100)); break;
    default: sprintf(out, "%.*fe%d", rand()%30, m, rand()%9000-4500); break;
    }
}
int main(void) {
    srand(42);
    char a[6000], b[6000], r[6000];
    const char *edge[] = {"1e4932","-1e4932","1.1e4932","1.2e4932","1e-4950","1e-4951","3e-4951","2e-4951","1e-4940","0x1p-16445","0x1p-16446","0x1.8p-16446","0x1p16383","0x1p16384",
      "inf","-inf","Infinity","nan","1e","1e+","+1",".5","5.","-.5e-3","0x","0x1p","0x.8","0X1P3","00012","1_0"," 1","1 ","","0","-0","0e999999999","1e-999999999","123456789012345678901234567890","0.1","0.2","0.3",
      "0x1p-18","0x3p-19","1.00000000000000000005","99999999999999999999.5","18446744073709551617","0.000000000000000005","0.000000000000000015","-0.000000000000000005"};
    int ne = sizeof(edge)/sizeof(edge[0]);
    for (int i = 0; i < ne*ne + 3000; i++) {
        if (i < ne*ne) { strcpy(a, edge[i/ne]); strcpy(b, edge[i%ne]); } else { rnd(a); rnd(b); }
        long double x, y;
        if (!s2ld(a,&x)) { printf("%s\t%s\tBADA\n", a, b); continue; }
        human(x, r);  /* the stored value after SET then INCRBYFLOAT 0 would be r; we test SET a; INCRBYFLOAT b */
        if (!s2ld(b,&y)) { printf("%s\t%s\tBADB\n", a, b); continue; }
        long double z = x + y;
        if (isnan(z) || isinf(z)) { printf("%s\t%s\tNANINF\n", a, b); continue; }
        human(z, r);
        printf("%s\t%s\t%s\n", a, b, r);
    }
    return 0;
}
