# Bad sample for the 5.1 rule EnumUnderlyingType: enum E : long
enum Size : long { Small = 1; Large = 4294967296 }
