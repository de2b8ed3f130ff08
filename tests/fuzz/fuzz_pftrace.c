/*
 * fuzz_pftrace.c -- fuzz_trace with every input made to start like a Perfetto protobuf trace
 * (a TracePacket field tag), so that mutations reach the protobuf reader's depths.
 */
#define FUZZ_TRACE_PREFIX 0x0a /* field 1 (packet), length-delimited */
#include "fuzz_trace.c"
