#ifndef SAMPLE_LIB_H
#define SAMPLE_LIB_H
int lib_work(int x);
int lib_inner(int x);
#endif
