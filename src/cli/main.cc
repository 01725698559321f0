// The psflow program.
#include "psflow/main.h"

int main(int argc, char** argv) { return psflow::psflow_main(argc, argv); }
