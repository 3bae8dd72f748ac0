#ifndef TRIBUTARY_CZEROMQ_SHIM_H
#define TRIBUTARY_CZEROMQ_SHIM_H
#include <zmq.h>
#include <sys/eventfd.h>
#endif
