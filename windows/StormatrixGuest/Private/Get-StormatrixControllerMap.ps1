function Get-StormatrixControllerMap {
    <#
    .SYNOPSIS
    PCI vendor/device ids of the virtual storage controllers QEMU and ESXi present, by stormatrix
    controller name.

    .NOTES
    Ids from QEMU's hw/ (virtio legacy 1af4:1001/1004, modern 1af4:1042/1048; pvscsi 15ad:07c0;
    lsi53c895a 1000:0012; lsi53c810 1000:0001; megasas 1000:0060, megasas-gen2 1000:0079 (QEMU hw/scsi/megasas.c, PCI_DEVICE_ID_LSI_SAS0079); ich9-ahci
    8086:2922; piix3/piix4 IDE 8086:7010/7111; nvme 1b36:0010) and ESXi (LSI Logic 1000:0030,
    LSI Logic SAS 1000:0054, VMware NVMe 15ad:07f0). A controller stormatrix cannot name is reported
    as 'unknown' with its hardware id, never dropped.
    #>
    [CmdletBinding()]
    [OutputType([System.Collections.Specialized.OrderedDictionary])]
    param()
    [ordered]@{
        'VEN_1AF4&DEV_1001' = 'virtio-blk'
        'VEN_1AF4&DEV_1042' = 'virtio-blk'
        'VEN_1AF4&DEV_1004' = 'virtio-scsi'
        'VEN_1AF4&DEV_1048' = 'virtio-scsi'
        'VEN_15AD&DEV_07C0' = 'pvscsi'
        'VEN_1000&DEV_0012' = 'lsi'
        'VEN_1000&DEV_0001' = 'lsi53c810'
        'VEN_1000&DEV_0060' = 'megasas'
        'VEN_1000&DEV_0079' = 'megasas'
        'VEN_8086&DEV_2922' = 'sata'
        'VEN_8086&DEV_7010' = 'ide'
        'VEN_8086&DEV_7111' = 'ide'
        'VEN_1B36&DEV_0010' = 'nvme'
        'VEN_15AD&DEV_07F0' = 'nvme'
        'VEN_1000&DEV_0030' = 'lsilogic'
        'VEN_1000&DEV_0054' = 'lsilogic-sas'
    }
}
