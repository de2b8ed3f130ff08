/* ncsim command line (temporary entry point while the subcommands are being written). */
#include <stdio.h>

int main(void)
{
    fputs("ncsim: under construction\n", stderr);
    return 2;
}
