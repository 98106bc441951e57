// DLManagedTensorVersioned (DLPack 1.0) is declared in the public header.
#pragma once
#include "shapeml_dlpack.h"
