// CShoalWire: the parts of the C interface (shoalwire.h) that are plain C; the codec itself is
// exported from Swift (Sources/ShoalWireC).
#include <stdlib.h>
#include "shoalwire.h"

void shoal_free(void *pointer) { free(pointer); }

int shoal_abi_version(void) { return SHOAL_ABI_VERSION; }
