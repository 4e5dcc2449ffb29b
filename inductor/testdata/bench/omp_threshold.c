/* The parallel-threshold measurement behind inductor.ParallelMinWork: a pointwise kernel as the
 * code generator emits it, serial vs "omp parallel for simd" on 2 threads, timed in a plain C
 * process (a Go test process distorts it: Go runtime threads compete with the OpenMP workers).
 * gcc -O3 -fopenmp -mavx2 omp_threshold.c -o /tmp/t && /tmp/t */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <omp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
void kern(const float*restrict a, float*restrict b, int64_t n, int nt, int par){
  if(par){
  #pragma omp parallel for simd num_threads(nt) schedule(static)
  for(int64_t i=0;i<n;i++) b[i]=a[i]*2.0f+1.0f;
  } else {
  #pragma omp simd
  for(int64_t i=0;i<n;i++) b[i]=a[i]*2.0f+1.0f;
  }
}
int main(){
  for(int64_t n=4096;n<=4194304;n*=4){
    float*a=malloc(n*4),*b=malloc(n*4); for(int64_t i=0;i<n;i++)a[i]=i;
    for(int par=0;par<2;par++){
      for(int w=0;w<50;w++) kern(a,b,n,2,par);
      int reps=2000; double t0=now(); for(int r=0;r<reps;r++) kern(a,b,n,2,par); double t=(now()-t0)/reps;
      printf("n=%ld par=%d %.2f us\n",(long)n,par,t*1e6);
    }
    free(a);free(b);
  }
}
