// Nothing to compile: the module is its header (include/CFuzzerDriver.h).
#include "CFuzzerDriver.h"
