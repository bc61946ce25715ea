# The fio runner for real: Linux fio against a file, so argument building, the --output file, the
# exit-code check and the JSON parsing all run for real. Skipped where no fio is installed.
BeforeDiscovery {
    $script:fio = (Get-Command -Name fio -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1).Source
}

BeforeAll {
    Import-Module -Name (Join-Path $PSScriptRoot '../../../windows/StormatrixGuest/StormatrixGuest.psd1') -Force
    $script:fioPath = (Get-Command -Name fio -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1).Source
}

AfterAll {
    Remove-Module -Name StormatrixGuest -Force -ErrorAction SilentlyContinue
}

Describe 'Invoke-StormatrixFio with Linux fio' -Skip:(-not $script:fio) {
    It 'Should run fio on a file and return its JSON' {
        $file = Join-Path $TestDrive 'fio-target.dat'
        $r = Invoke-StormatrixFio -FileName $file -FileSizeMiB 4 -IoEngine psync -Direct 0 -FioPath $script:fioPath `
            -Workload @{ ReadWrite = 'randread'; BlockSize = 4096; IoDepth = 1; NumJobs = 1; RampSeconds = 0; RuntimeSeconds = 1 } -OutputDirectory $TestDrive
        $r.Engine | Should -Be 'fio'
        $r.ExitCode | Should -Be 0
        $r.FioVersion | Should -BeLike 'fio-3*'
        $document = $r.Raw | ConvertFrom-Json
        $document.jobs[0].jobname | Should -Be 'stormatrix'
        $document.jobs[0].read.io_bytes | Should -BeGreaterThan 0
        # --lat_percentiles=1: the total latency's percentiles beside the completion latency's (fio's default)
        $document.jobs[0].read.lat_ns.percentile.'99.000000' | Should -BeGreaterThan 0
        $document.jobs[0].read.clat_ns.percentile.'99.000000' | Should -BeGreaterThan 0
        @(Get-ChildItem -LiteralPath $TestDrive -Filter 'stormatrix-fio-*.json').Count | Should -Be 0
    }

    It 'Should throw FioFailed with fio''s message when fio rejects the job' {
        $notADir = Join-Path $TestDrive 'a-file'
        Set-Content -LiteralPath $notADir -Value 'x'
        $missingDir = Join-Path $notADir 'file.dat'  # under a file: fio cannot create it
        { Invoke-StormatrixFio -FileName $missingDir -FileSizeMiB 1 -IoEngine psync -Direct 0 -FioPath $script:fioPath `
                -Workload @{ ReadWrite = 'read'; BlockSize = 4096; RuntimeSeconds = 1 } -OutputDirectory $TestDrive } | Should -Throw -ErrorId 'Stormatrix.FioFailed'
    }

    It 'Should write start and end markers to stdout when asked' {
        $file = Join-Path $TestDrive 'marker.dat'
        # a new pwsh of the same installation, however this one was started: a native install has its
        # pwsh beside the engine ($PSHOME); the .NET tool (`pwsh` -> `dotnet pwsh.dll`) has pwsh.dll there
        $native = Join-Path $PSHOME 'pwsh'
        $pwsh = @(if (Test-Path -LiteralPath $native -PathType Leaf) { $native } else { (Get-Command -Name dotnet -CommandType Application)[0].Source; Join-Path $PSHOME 'pwsh.dll' })
        $module = Join-Path $PSScriptRoot '../../../windows/StormatrixGuest/StormatrixGuest.psd1'
        $script = "Import-Module '$module'; `$null = Invoke-StormatrixFio -FileName '$file' -FileSizeMiB 1 -IoEngine psync -Direct 0 -FioPath '$($script:fioPath)' -Workload @{ ReadWrite = 'read'; BlockSize = 4096; RuntimeSeconds = 1 } -WriteMarkers"
        $out = & $pwsh[0] @($pwsh | Select-Object -Skip 1) -NoProfile -NonInteractive -Command $script
        $LASTEXITCODE | Should -Be 0
        ($out -join "`n") | Should -Match '##stormatrix:engine-started '
        ($out -join "`n") | Should -Match '##stormatrix:engine-ended '
    }
}
