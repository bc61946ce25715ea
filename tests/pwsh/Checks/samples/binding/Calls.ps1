# Calls to the functions of Functions.ps1; each line says what static binding must report.
Get-SampleDisk -Serial 'QM0001'                            # expect: ok
Get-SampleDisk 'QM0001' -Controller 'nvme'                 # expect: ok
Get-SampleDisk -Number 1                                   # expect: ok
Get-SampleDisk -Serial 'QM0001' -Size 10                   # expect: NamedParameterNotFound
Get-SampleDisk -Serial 'QM0001' -Contr 'nvme'              # expect: AmbiguousParameter
Get-SampleDisk -Controller 'nvme'                          # expect: missing mandatory parameter
Get-SampleDisk -Serial 'QM0001' -Number 1                  # expect: AmbiguousParameterSet
Get-SampleDisk -Serial 'QM0001' -Serial 'QM0002'           # expect: ParameterAlreadyBound
Get-SampleDisk 'QM0001' 'extra'                            # expect: PositionalParameterNotFound
Get-SampleDisk -Serial 'QM0001' | Set-SampleDisk -Offline $true   # expect: ok
Set-SampleDisk -Offline $true                              # expect: missing mandatory parameter
Get-SamplePrivate -Disk 'QM0001'                           # expect: ok
Get-SampleMissing -Disk 'QM0001'                           # expect: is not defined
Get-SampleDisk @splat -Size 1                              # expect: NamedParameterNotFound
Get-SampleDisk @splat                                      # expect: ok
