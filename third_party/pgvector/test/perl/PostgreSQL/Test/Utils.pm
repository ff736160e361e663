package PostgreSQL::Test::Utils;

use TestLib;

1;
